package ntbring_test

import (
	"sync"
	"testing"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// benchJob starts a job of len(hosts) PEs in process, PE i posing as
// running on hosts[i], and returns PE 0's World, a symmetric word and a
// function that finalizes them all. The other PEs only serve: the ring
// progresses without their calls.
func benchJob(b *testing.B, hosts []string, env map[string]string) (*shmem.World, *int64, func()) {
	b.Helper()
	shm := b.TempDir()
	lookup := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return shm, true
		}
		v, ok := env[k]
		return v, ok
	}
	boots := bootstrap.NewLocal(len(hosts))
	worlds := make([]*shmem.World, len(hosts))
	words := make([][]int64, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for pe, bt := range boots {
		wg.Go(func() {
			worlds[pe], errs[pe] = shmem.Init(shmem.WithBootstrap(bt, "bench"), shmem.WithProvider("ntbring"),
				shmem.WithHostID(hosts[pe]), shmem.WithEnv(lookup), shmem.WithHeapSize(1<<20),
				shmem.WithThreadLevel(shmem.ThreadSingle))
			if errs[pe] == nil {
				words[pe], errs[pe] = shmem.Malloc[int64](worlds[pe], 1)
			}
		})
	}
	wg.Wait()
	for pe, err := range errs {
		if err != nil {
			b.Fatalf("PE %d: %v", pe, err)
		}
	}
	return worlds[0], &words[0][0], func() {
		var fw sync.WaitGroup
		for _, w := range worlds {
			fw.Go(func() { _ = w.Finalize() })
		}
		fw.Wait()
	}
}

// The figures of docs/benchmarks.md: an 8-byte put (then quiet), get and
// fetch-add from PE 0 to a PE of another host, in a job of 2 hosts x 2
// PEs (ntbring+loopback, each PE the node of its lane) to the PE of its
// own lane and to the PE of the other lane, beside ntbring alone at one
// PE per host (2 hosts), on the emulated device's default timing model.
func BenchmarkLanesPair(b *testing.B) {
	twoByTwo := []string{"a", "a", "b", "b"}
	for _, c := range []struct {
		name   string
		hosts  []string
		target int
	}{
		{"2x2/other-host-same-lane", twoByTwo, 2},
		{"2x2/other-host-other-lane", twoByTwo, 3},
		{"1x2-alone/other-host", []string{"a", "b"}, 1},
	} {
		b.Run(c.name+"/put", func(b *testing.B) {
			w, word, done := benchJob(b, c.hosts, nil)
			defer done()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := shmem.P(w, word, int64(i), c.target); err != nil {
					b.Fatal(err)
				}
				if err := w.Quiet(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/get", func(b *testing.B) {
			w, word, done := benchJob(b, c.hosts, nil)
			defer done()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := shmem.G(w, word, c.target); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/fadd", func(b *testing.B) {
			w, word, done := benchJob(b, c.hosts, nil)
			defer done()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := shmem.AtomicFetchAdd(w, word, 1, c.target); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
