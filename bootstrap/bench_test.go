package bootstrap

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

// BenchmarkAllgather measures one allgather of 8 bytes per member over
// loopback TCP: the time per op is the round trip every member sees, with
// all members running at once.
func BenchmarkAllgather(b *testing.B) {
	for _, n := range []int{2, 8} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := NewServer(ln, n, testSecret)
			done := make(chan error, 1)
			go func() { done <- srv.Serve() }()
			cs := make([]*Client, n)
			for r := range cs {
				if cs[r], err = Dial(ln.Addr().String(), r, n, testSecret, watchdog); err != nil {
					b.Fatal(err)
				}
			}
			data := []byte("12345678")
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make([]error, n)
			for r, c := range cs[1:] {
				wg.Go(func() {
					for range b.N {
						if _, err := c.Allgather(data); err != nil {
							errs[r+1] = err
							return
						}
					}
				})
			}
			for range b.N {
				if _, err := cs[0].Allgather(data); err != nil {
					errs[0] = err
					break
				}
			}
			wg.Wait()
			b.StopTimer()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, c := range cs {
				c.Close()
			}
			srv.Close()
			<-done
		})
	}
}
