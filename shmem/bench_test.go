package shmem_test

import (
	"sync"
	"testing"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

// pair runs a two-PE job over loopback: PE 1 idles in a barrier while the
// benchmark, as PE 0, runs body against it.
func pair(b *testing.B, heap int64, body func(w *shmem.World, buf []byte)) {
	b.Helper()
	lookup := shmLookup(b.TempDir(), nil)
	id := jobID()
	boots := bootstrap.NewLocal(2)
	init := func(pe int) (*shmem.World, []byte) {
		w, err := shmem.Init(shmem.WithBootstrap(boots[pe], id), shmem.WithEnv(lookup),
			shmem.WithHeapSize(heap), shmem.WithProvider("loopback"))
		if err != nil {
			b.Fatal(err)
		}
		buf, err := shmem.Malloc[byte](w, int(heap/2))
		if err != nil {
			b.Fatal(err)
		}
		return w, buf
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w, _ := init(1)
		w.BarrierAll() // until PE 0 is done
		w.Finalize()
	}()
	w, buf := init(0)
	b.ReportAllocs()
	b.ResetTimer()
	body(w, buf)
	b.StopTimer()
	w.BarrierAll()
	w.Finalize()
	wg.Wait()
}

func must(b *testing.B, err error) {
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkPut8Quiet(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		dst := shmemSlice[int64](buf)
		src := []int64{7}
		for b.Loop() {
			must(b, shmem.Put(w, dst[:1], src, 1))
			must(b, w.Quiet())
		}
	})
}

func BenchmarkP8(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		dst := shmemSlice[int64](buf)
		for b.Loop() {
			must(b, shmem.P(w, &dst[0], 7, 1))
		}
	})
}

func BenchmarkG8(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		src := shmemSlice[int64](buf)
		for b.Loop() {
			_, err := shmem.G(w, &src[0], 1)
			must(b, err)
		}
	})
}

func BenchmarkGet8(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		src := shmemSlice[int64](buf)
		dst := make([]int64, 1)
		for b.Loop() {
			must(b, shmem.Get(w, dst, src[:1], 1))
		}
	})
}

func BenchmarkFetchAdd(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		x := shmemSlice[int64](buf)
		for b.Loop() {
			_, err := shmem.AtomicFetchAdd(w, &x[0], 1, 1)
			must(b, err)
		}
	})
}

func BenchmarkCompareSwap(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		x := shmemSlice[int64](buf)
		for b.Loop() {
			_, err := shmem.AtomicCompareSwap(w, &x[0], 0, 1, 1)
			must(b, err)
		}
	})
}

func BenchmarkPut4MiB(b *testing.B) {
	const size = 4 << 20
	pair(b, 2*size+(1<<20), func(w *shmem.World, buf []byte) {
		src := make([]byte, size)
		b.SetBytes(size)
		for b.Loop() {
			must(b, shmem.Put(w, buf[:size], src, 1))
			must(b, w.Quiet())
		}
	})
}

func shmemSlice[T shmem.Elem](buf []byte) []T { return mem.Slice[T](buf) }

func BenchmarkPutMem8Quiet(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		src := make([]byte, 8)
		for b.Loop() {
			must(b, shmem.PutMem(w, buf[:8], src, 1))
			must(b, w.Quiet())
		}
	})
}

func BenchmarkGetMem8(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		dst := make([]byte, 8)
		for b.Loop() {
			must(b, shmem.GetMem(w, dst, buf[:8], 1))
		}
	})
}

func BenchmarkAtomicAdd(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		x := shmemSlice[int64](buf)
		for b.Loop() {
			must(b, shmem.AtomicAdd(w, &x[0], 1, 1))
		}
	})
}

// BenchmarkFetchAddSerialized is BenchmarkFetchAdd on a context one
// goroutine uses at a time, which a provider may serve more cheaply.
func BenchmarkFetchAddSerialized(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		x := shmemSlice[int64](buf)
		ctx, err := w.NewContext(shmem.ContextOptions{Serialized: true})
		must(b, err)
		for b.Loop() {
			_, err := shmem.AtomicFetchAdd(ctx, &x[0], 1, 1)
			must(b, err)
		}
		b.StopTimer()
		must(b, ctx.Destroy())
	})
}

// The 1.6 routines on the same pair: a signal update without data, a put
// of interleaved blocks, and a per-PE quiet.
func BenchmarkAddSignal(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		sig := &shmemSlice[uint64](buf)[0]
		for b.Loop() {
			must(b, shmem.AddSignal(w, sig, 1, 1))
		}
	})
}

func BenchmarkIBPut4x8(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		dst := shmemSlice[int64](buf)
		src := make([]int64, 32)
		for b.Loop() {
			must(b, shmem.IBPut(w, dst, src, 16, 8, 4, 4, 1))
		}
	})
}

func BenchmarkPEQuiet(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		dst := shmemSlice[int64](buf)
		src := []int64{7}
		for b.Loop() {
			must(b, shmem.PutNBI(w, dst[:1], src, 1))
			must(b, w.PEQuiet(1))
		}
	})
}
