package conformance

import (
	"sync"
	"testing"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// BenchWorlds starts a job of len(hosts) PEs in process on provider spec,
// PE i posing as running on hosts[i], with env as the PEs' only
// environment (beside a fresh shared-memory directory) and a 1 MiB heap
// each, and returns every PE's World and a function that finalizes them
// all. It fails b if any PE fails to start.
func BenchWorlds(b *testing.B, spec string, hosts []string, env map[string]string) ([]*shmem.World, func()) {
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
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for pe, bt := range boots {
		wg.Go(func() {
			worlds[pe], errs[pe] = shmem.Init(shmem.WithBootstrap(bt, "bench"), shmem.WithProvider(spec),
				shmem.WithHostID(hosts[pe]), shmem.WithEnv(lookup), shmem.WithHeapSize(1<<20),
				shmem.WithThreadLevel(shmem.ThreadSingle))
		})
	}
	wg.Wait()
	finalize := func() {
		var fw sync.WaitGroup
		for _, w := range worlds {
			if w != nil {
				fw.Go(func() { _ = w.Finalize() })
			}
		}
		fw.Wait()
	}
	for pe, err := range errs {
		if err != nil {
			finalize()
			b.Fatalf("PE %d: %v", pe, err)
		}
	}
	return worlds, finalize
}

// BenchJob starts a job as BenchWorlds does and returns PE 0's World, a
// symmetric word and a function that finalizes every PE. The other PEs
// only serve: it is for providers that progress without their calls.
func BenchJob(b *testing.B, spec string, hosts []string, env map[string]string) (*shmem.World, *int64, func()) {
	b.Helper()
	worlds, finalize := BenchWorlds(b, spec, hosts, env)
	words := make([][]int64, len(worlds))
	errs := make([]error, len(worlds))
	var wg sync.WaitGroup
	for pe, w := range worlds {
		wg.Go(func() { words[pe], errs[pe] = shmem.Malloc[int64](w, 1) })
	}
	wg.Wait()
	for pe, err := range errs {
		if err != nil {
			finalize()
			b.Fatalf("PE %d: %v", pe, err)
		}
	}
	return worlds[0], &words[0][0], finalize
}

// BenchPair runs name+"/put" (an 8-byte put, then quiet), name+"/get" and
// name+"/fadd" (a fetch-add) from PE 0 to PE target, each in a job of its
// own that BenchJob starts with spec, hosts and env.
func BenchPair(b *testing.B, name, spec string, hosts []string, env map[string]string, target int) {
	b.Run(name+"/put", func(b *testing.B) {
		w, word, done := BenchJob(b, spec, hosts, env)
		defer done()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := shmem.P(w, word, int64(i), target); err != nil {
				b.Fatal(err)
			}
			if err := w.Quiet(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(name+"/get", func(b *testing.B) {
		w, word, done := BenchJob(b, spec, hosts, env)
		defer done()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := shmem.G(w, word, target); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(name+"/fadd", func(b *testing.B) {
		w, word, done := BenchJob(b, spec, hosts, env)
		defer done()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := shmem.AtomicFetchAdd(w, word, 1, target); err != nil {
				b.Fatal(err)
			}
		}
	})
}
