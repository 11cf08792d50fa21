package shmem_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/shmem"
)

// collBench runs an n-PE job over loopback in which every PE calls the
// collective that setup returns b.N times, in step; PE 0 runs on the
// benchmark's goroutine and is the one timed.
func collBench(b *testing.B, n int, setup func(w *shmem.World) (func() error, error)) {
	b.Helper()
	collBenchWith(b, n, nil, setup)
}

// collBenchWith is collBench with more options for every PE.
func collBenchWith(b *testing.B, n int, opts []shmem.Option, setup func(w *shmem.World) (func() error, error)) {
	b.Helper()
	lookup := shmLookup(b.TempDir(), nil)
	id := jobID()
	boots := bootstrap.NewLocal(n)
	pe := func(rank int, timed bool) error {
		w, err := shmem.Init(append([]shmem.Option{shmem.WithBootstrap(boots[rank], id), shmem.WithEnv(lookup),
			shmem.WithHeapSize(1 << 20), shmem.WithProvider("loopback")}, opts...)...)
		if err != nil {
			return err
		}
		defer w.Finalize()
		op, err := setup(w)
		if err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if timed {
			b.ReportAllocs()
			b.ResetTimer()
		}
		for range b.N {
			if err := op(); err != nil {
				return err
			}
		}
		if timed {
			b.StopTimer()
		}
		return w.BarrierAll()
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for rank := 1; rank < n; rank++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[rank] = pe(rank, false)
		}()
	}
	errs[0] = pe(0, true)
	wg.Wait()
	for rank, err := range errs {
		if err != nil {
			b.Fatalf("PE %d: %v", rank, err)
		}
	}
}

var benchPEs = []int{2, 4, 8}

func BenchmarkBarrierAll(b *testing.B) {
	for _, n := range benchPEs {
		b.Run(fmt.Sprint(n, "PEs"), func(b *testing.B) {
			collBench(b, n, func(w *shmem.World) (func() error, error) { return w.BarrierAll, nil })
		})
	}
}

func BenchmarkSumReduce8B(b *testing.B) {
	for _, n := range benchPEs {
		b.Run(fmt.Sprint(n, "PEs"), func(b *testing.B) {
			collBench(b, n, func(w *shmem.World) (func() error, error) {
				src, dest := []int64{int64(w.MyPE())}, make([]int64, 1)
				return func() error { return shmem.SumReduce(w.TeamWorld(), dest, src) }, nil
			})
		})
	}
}

func BenchmarkSumReduce4KiB(b *testing.B) {
	collBench(b, 4, func(w *shmem.World) (func() error, error) {
		src, dest := make([]float64, 512), make([]float64, 512)
		b.SetBytes(4096)
		return func() error { return shmem.SumReduce(w.TeamWorld(), dest, src) }, nil
	})
}

func BenchmarkBroadcast8B(b *testing.B) {
	for _, n := range benchPEs {
		b.Run(fmt.Sprint(n, "PEs"), func(b *testing.B) {
			collBench(b, n, func(w *shmem.World) (func() error, error) {
				dest, err := shmem.Malloc[int64](w, 1)
				src := []int64{7}
				return func() error { return shmem.Broadcast(w.TeamWorld(), dest, src, 0) }, err
			})
		})
	}
}

func BenchmarkFCollect8B(b *testing.B) {
	collBench(b, 4, func(w *shmem.World) (func() error, error) {
		dest, err := shmem.Malloc[int64](w, 4)
		src := []int64{7}
		return func() error { return shmem.FCollect(w.TeamWorld(), dest, src) }, err
	})
}

// BenchmarkSumReduce4MiB times the World's large reduction, a
// reduce-scatter and an allgather piece by piece.
func BenchmarkSumReduce4MiB(b *testing.B) {
	for _, n := range []int{2, 4} {
		b.Run(fmt.Sprint(n, "PEs"), func(b *testing.B) {
			collBench(b, n, func(w *shmem.World) (func() error, error) {
				src, dest := make([]int64, 512<<10), make([]int64, 512<<10)
				b.SetBytes(4 << 20)
				return func() error { return shmem.SumReduce(w.TeamWorld(), dest, src) }, nil
			})
		})
	}
}

// BenchmarkHostColl runs the collectives on 6 PEs posing as 3 hosts of 2
// (hosts) and flat: over loopback both move data through shared memory,
// so this measures the host-aware paths' own cost, and that they allocate
// nothing.
func BenchmarkHostColl(b *testing.B) {
	const n = 6
	for _, shape := range []struct {
		name string
		opts []shmem.Option
	}{{"flat", nil}, {"hosts", []shmem.Option{shmem.WithHostMap([]int{0, 0, 1, 1, 2, 2})}}} {
		ops := []struct {
			name string
			make func(w *shmem.World) (func() error, error)
		}{
			{"barrier", func(w *shmem.World) (func() error, error) { return w.BarrierAll, nil }},
			{"sum-reduce-8B", func(w *shmem.World) (func() error, error) {
				src, dest := []int64{1}, make([]int64, 1)
				tm := w.TeamWorld()
				return func() error { return shmem.SumReduce(tm, dest, src) }, nil
			}},
			{"sum-reduce-64KiB", func(w *shmem.World) (func() error, error) {
				src, dest := make([]float64, 8<<10), make([]float64, 8<<10)
				tm := w.TeamWorld()
				return func() error { return shmem.SumReduce(tm, dest, src) }, nil
			}},
			{"broadcast-64KiB", func(w *shmem.World) (func() error, error) {
				dest, err := shmem.Malloc[byte](w, 64<<10)
				src := make([]byte, 64<<10)
				tm := w.TeamWorld()
				return func() error { return shmem.Broadcast(tm, dest, src, 1) }, err
			}},
			{"fcollect-8KiB", func(w *shmem.World) (func() error, error) {
				dest, err := shmem.Malloc[byte](w, n*8<<10)
				src := make([]byte, 8<<10)
				tm := w.TeamWorld()
				return func() error { return shmem.FCollect(tm, dest, src) }, err
			}},
			{"collect-8KiB", func(w *shmem.World) (func() error, error) {
				dest, err := shmem.Malloc[byte](w, n*8<<10)
				src := make([]byte, 8<<10)
				tm := w.TeamWorld()
				return func() error { return shmem.Collect(tm, dest, src) }, err
			}},
		}
		for _, op := range ops {
			b.Run(shape.name+"/"+op.name, func(b *testing.B) { collBenchWith(b, n, shape.opts, op.make) })
		}
	}
}
