package plugin_test

import (
	"sync"
	"testing"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/loopback"
)

// pair is a two-PE job in this process: PE 0 issues, PE 1 is the target.
type pair struct {
	doms [2]core.Domain
	regs [2]core.Region // each PE's handle of the region
	reg  core.Region    // PE 0's
	ep   core.Endpoint
}

const benchRegion = 2 << 20

// openPair opens a two-PE job on the named provider, with one region and
// an endpoint on PE 0.
func openPair(b testing.TB, name string) *pair {
	b.Helper()
	p, err := core.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	shm := b.TempDir()
	env := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return shm, true
		}
		v, ok := startEnv[k] // a loaded machine's start timeout, as the suites get
		return v, ok
	}
	boots := bootstrap.NewLocal(2)
	pr := &pair{}
	var errs [2]error
	var wg sync.WaitGroup
	for rank := range 2 {
		wg.Go(func() {
			d, err := p.Open(&core.Config{Bootstrap: boots[rank], JobID: "bench", Env: env})
			if err == nil {
				pr.doms[rank] = d
				pr.regs[rank], err = d.NewRegion(benchRegion)
			}
			errs[rank] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	pr.reg = pr.regs[0]
	if pr.ep, err = pr.doms[0].NewEndpoint(core.EndpointOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		pr.ep.Close()
		var wg sync.WaitGroup
		for _, d := range pr.doms {
			wg.Go(func() { d.Close() })
		}
		wg.Wait()
	})
	return pr
}

// eachProvider runs a benchmark on loopback in this process and on the
// same provider through the plugin, side by side.
func eachProvider(b *testing.B, f func(b *testing.B, p *pair)) {
	for _, name := range []string{loopback.Name, examplePlugin} {
		b.Run(name, func(b *testing.B) {
			p := openPair(b, name)
			b.ReportAllocs()
			b.ResetTimer()
			f(b, p)
		})
	}
}

// BenchmarkPut8Quiet is the latency of a small put made complete.
func BenchmarkPut8Quiet(b *testing.B) {
	src := make([]byte, 8)
	eachProvider(b, func(b *testing.B, p *pair) {
		for b.Loop() {
			if err := p.ep.Put(1, p.reg, 0, src); err != nil {
				b.Fatal(err)
			}
			if err := p.ep.Quiet(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGet8 is the latency of a small get.
func BenchmarkGet8(b *testing.B) {
	dst := make([]byte, 8)
	eachProvider(b, func(b *testing.B, p *pair) {
		for b.Loop() {
			if err := p.ep.Get(1, p.reg, 0, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFetchAdd is the latency of a fetching atomic.
func BenchmarkFetchAdd(b *testing.B) {
	eachProvider(b, func(b *testing.B, p *pair) {
		for b.Loop() {
			if _, err := p.ep.FetchAtomic(1, p.reg, 8, core.AtomicAdd, core.Uint64, 1, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPut8Pipelined is the rate of small puts issued back to back,
// made complete every 64: what pipelining on the stream buys.
func BenchmarkPut8Pipelined(b *testing.B) {
	src := make([]byte, 8)
	eachProvider(b, func(b *testing.B, p *pair) {
		i := 0
		for b.Loop() {
			if err := p.ep.Put(1, p.reg, 8*(i%64), src); err != nil {
				b.Fatal(err)
			}
			if i++; i%64 == 0 {
				if err := p.ep.Quiet(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkPut1MiB is the bandwidth of large puts made complete.
func BenchmarkPut1MiB(b *testing.B) {
	src := make([]byte, 1<<20)
	eachProvider(b, func(b *testing.B, p *pair) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if err := p.ep.Put(1, p.reg, 0, src); err != nil {
				b.Fatal(err)
			}
			if err := p.ep.Quiet(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPut8Stream is the rate of small puts issued back to back with
// no quiet until the end: the flow control's steady state, where the host
// collects results only because its window of outstanding commands is full.
func BenchmarkPut8Stream(b *testing.B) {
	src := make([]byte, 8)
	eachProvider(b, func(b *testing.B, p *pair) {
		i := 0
		for b.Loop() {
			if err := p.ep.Put(1, p.reg, 8*(i%4096), src); err != nil {
				b.Fatal(err)
			}
			i++
		}
		if err := p.ep.Quiet(); err != nil {
			b.Fatal(err)
		}
	})
}
