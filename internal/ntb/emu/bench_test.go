package emu

import (
	"testing"

	"github.com/goshmem/goshmem/internal/ntb"
)

// BenchmarkDoorbellRoundTrip: a rings b, b's handler rings a back.
func BenchmarkDoorbellRoundTrip(b *testing.B) {
	for _, m := range []struct {
		name  string
		model Model
	}{{"off", Model{}}, {"gen3x8", Gen3x8}} {
		b.Run(m.name, func(b *testing.B) {
			o := fastOptions()
			o.Model = m.model
			x, y := pair(newRing(b, 2, o))
			stop := make(chan struct{})
			go func() {
				for {
					select {
					case e := <-y.Events():
						if e.Kind == ntb.DoorbellEvent {
							_ = y.DBClear(e.DB)
							_ = y.PeerDBSet(1)
						}
					case <-stop:
						return
					}
				}
			}()
			defer close(stop)
			b.ReportAllocs()
			for b.Loop() {
				if err := x.PeerDBSet(1); err != nil {
					b.Fatal(err)
				}
				for e := range x.Events() {
					if e.Kind == ntb.DoorbellEvent {
						_ = x.DBClear(e.DB)
						break
					}
				}
			}
		})
	}
}

func BenchmarkSpad(b *testing.B) {
	for _, m := range []struct {
		name  string
		model Model
	}{{"off", Model{}}, {"gen3x8", Gen3x8}} {
		o := fastOptions()
		o.Model = m.model
		x, _ := pair(newRing(b, 2, o))
		b.Run("local-read/"+m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.SpadRead(1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("peer-read/"+m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.PeerSpadRead(1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("peer-write/"+m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := x.PeerSpadWrite(1, 7); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDMA(b *testing.B) {
	for _, m := range []struct {
		name  string
		model Model
	}{{"off", Model{}}, {"gen3x8", Gen3x8}} {
		for _, size := range []int{4 << 10, 1 << 20} {
			b.Run(m.name+"/"+sizeName(size), func(b *testing.B) {
				o := fastOptions()
				o.Model = m.model
				x, y := pair(newRing(b, 2, o))
				if _, err := y.MWSetTrans(0, 1<<20); err != nil {
					b.Fatal(err)
				}
				out, err := x.PeerMW(0)
				if err != nil {
					b.Fatal(err)
				}
				ch, err := x.DMA(0)
				if err != nil {
					b.Fatal(err)
				}
				src := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if err := ch.Submit(out, src, nil); err != nil {
						b.Fatal(err)
					}
					if err := ch.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return itoa(n>>20) + "MiB"
	}
	return itoa(n>>10) + "KiB"
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
