package shmem_test

import (
	"sync"
	"testing"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

// pingPong runs a two-PE job over loopback in which PE 1 answers every
// round PE 0 starts: PE 0, the benchmark, calls serve with the round
// number, PE 1 calls answer with it; a round of -1 ends PE 1's loop.
func pingPong(b *testing.B, serve, answer func(w *shmem.World, flags []int64, round int64)) {
	b.Helper()
	lookup := shmLookup(b.TempDir(), nil)
	id := jobID()
	boots := bootstrap.NewLocal(2)
	init := func(pe int) (*shmem.World, []int64) {
		w, err := shmem.Init(shmem.WithBootstrap(boots[pe], id), shmem.WithEnv(lookup),
			shmem.WithHeapSize(1<<20), shmem.WithProvider("loopback"))
		must(b, err)
		flags, err := shmem.Malloc[int64](w, 64)
		must(b, err)
		return w, flags
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w, flags := init(1)
		for r := int64(1); ; r++ {
			must(b, shmem.WaitUntil(w, &flags[0], shmem.CmpNE, r-1))
			if flags[0] < 0 {
				break
			}
			answer(w, flags, r)
		}
		w.BarrierAll()
		w.Finalize()
	}()
	w, flags := init(0)
	b.ReportAllocs()
	r := int64(0)
	for b.Loop() {
		r++
		serve(w, flags, r)
	}
	must(b, shmem.P(w, &flags[0], -1, 1))
	w.BarrierAll()
	w.Finalize()
	wg.Wait()
}

// BenchmarkWaitUntilWake is a round trip of two wake-ups: each PE sleeps
// in WaitUntil until the other's P lands.
func BenchmarkWaitUntilWake(b *testing.B) {
	pingPong(b, func(w *shmem.World, f []int64, r int64) {
		must(b, shmem.P(w, &f[0], r, 1))
		must(b, shmem.WaitUntil(w, &f[1], shmem.CmpEQ, r))
	}, func(w *shmem.World, f []int64, r int64) {
		must(b, shmem.P(w, &f[1], r, 0))
	})
}

// BenchmarkPutSignalPingPong is the same round trip carrying 64 bytes
// with each signal: PutSignal there, SignalWaitUntil back.
func BenchmarkPutSignalPingPong(b *testing.B) {
	data := make([]int64, 8)
	pingPong(b, func(w *shmem.World, f []int64, r int64) {
		sig := mem.Slice[uint64](mem.Bytes(f))
		must(b, shmem.PutSignal(w, f[8:16], data, &sig[0], uint64(r), shmem.SignalSet, 1))
		_, err := shmem.SignalWaitUntil(w, &sig[2], shmem.CmpEQ, uint64(r))
		must(b, err)
	}, func(w *shmem.World, f []int64, r int64) {
		sig := mem.Slice[uint64](mem.Bytes(f))
		must(b, shmem.PutSignal(w, f[16:24], data, &sig[2], uint64(r), shmem.SignalSet, 0))
	})
}

// BenchmarkPutSignal8 issues 8-byte puts with a signal, without waiting.
func BenchmarkPutSignal8(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		x := shmemSlice[uint64](buf)
		src := []uint64{7}
		for b.Loop() {
			must(b, shmem.PutSignal(w, x[8:9], src, &x[0], 1, shmem.SignalAdd, 1))
		}
	})
}

// BenchmarkLockSetClear takes and releases an uncontended lock whose tail
// lives on the other PE.
func BenchmarkLockSetClear(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		x := shmemSlice[int64](buf)
		lock := &x[1] // with two PEs, odd words have their tail on PE 1
		for b.Loop() {
			must(b, shmem.SetLock(w, lock))
			must(b, shmem.ClearLock(w, lock))
		}
	})
}

// BenchmarkIPut64 puts 64 int64 at a stride of 2.
func BenchmarkIPut64(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		dst := shmemSlice[int64](buf)
		src := make([]int64, 64)
		b.SetBytes(64 * 8)
		for b.Loop() {
			must(b, shmem.IPut(w, dst, src, 2, 1, 64, 1))
		}
	})
}

// BenchmarkWaitUntilAny64 polls 64 flags of which only the last is set.
func BenchmarkWaitUntilAny64(b *testing.B) {
	pair(b, 1<<20, func(w *shmem.World, buf []byte) {
		flags := shmemSlice[int64](buf)[:64]
		flags[63] = 1
		for b.Loop() {
			_, err := shmem.WaitUntilAny(w, flags, nil, shmem.CmpEQ, 1)
			must(b, err)
		}
	})
}
