package shmem_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/shmem"
)

// symMem hands out symmetric buffers: from the heap (Malloc), or, when
// it has a registered static segment, carved out of that in the same
// order on every PE, so that each buffer lies at the same offset in
// every PE's segment, as a C program's globals do.
type symMem struct {
	w      *shmem.World
	static []byte
	next   int
}

// heapMem allocates with Malloc.
func heapMem(w *shmem.World) *symMem { return &symMem{w: w} }

// staticMem registers, collectively, a segment of at least size bytes:
// fresh pages, zero like a C program's bss. They are never unmapped:
// registered memory stays the program's after Finalize.
func staticMem(t testing.TB, w *shmem.World, size int) *symMem {
	page := os.Getpagesize()
	b, err := sys.MapPrivate((size + page - 1) / page * page)
	require.NoError(t, err)
	require.NoError(t, w.RegisterStatic(b))
	return &symMem{w: w, static: b}
}

// symMems runs f on heap buffers, then on static ones of size bytes.
func symMems(t testing.TB, w *shmem.World, size int, f func(where string, m *symMem)) {
	f("heap", heapMem(w))
	require.NoError(t, w.BarrierAll())
	f("static", staticMem(t, w, size))
}

// symMake returns n symmetric elements of T, zero if they are static.
func symMake[T shmem.Elem](t testing.TB, m *symMem, n int) []T {
	if m.static == nil {
		x, err := shmem.Malloc[T](m.w, n)
		require.NoError(t, err)
		return x
	}
	at := (m.next + 63) &^ 63
	end := at + n*mem.SizeOf[T]()
	require.LessOrEqual(t, end, len(m.static), "static segment too small")
	m.next = end
	return mem.Slice[T](m.static[at:end:end])
}

// A lock in static data and one in the heap are different locks, held
// at once; test_lock sees a static lock taken, and clearing one does not
// clear the other.
func TestStaticLockBesideHeapLock(t *testing.T) {
	const n = 3
	world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		st := staticMem(t, w, 1)
		slock := &symMake[int64](t, st, 1)[0]
		hlock := &symMake[int64](t, heapMem(w), 1)[0]
		if pe == 0 {
			require.NoError(t, shmem.SetLock(w, slock))
			require.NoError(t, shmem.SetLock(w, hlock))
			require.ErrorIs(t, shmem.SetLock(w, slock), shmem.ErrInvalid, "a held static lock is not taken twice")
		}
		require.NoError(t, w.BarrierAll())
		if pe != 0 {
			got, err := shmem.TestLock(w, slock)
			require.NoError(t, err)
			require.False(t, got, "PE 0 holds the static lock")
		}
		require.NoError(t, w.BarrierAll())
		if pe == 0 {
			require.NoError(t, shmem.ClearLock(w, slock))
			require.NoError(t, shmem.ClearLock(w, hlock))
			require.ErrorIs(t, shmem.ClearLock(w, slock), shmem.ErrInvalid, "cleared already")
		}
		require.NoError(t, w.BarrierAll())
		if pe == n-1 {
			got, err := shmem.TestLock(w, slock)
			require.NoError(t, err)
			require.True(t, got, "the static lock is free again")
			require.NoError(t, shmem.ClearLock(w, slock))
		}
		require.NoError(t, w.BarrierAll())
	})
}

// Ptr and AddrAccessible take static data as they take the heap: on
// loopback, whose PEs map each other's memory, Ptr gives a peer's copy.
func TestStaticPtrAndAddrAccessible(t *testing.T) {
	const n = 3
	world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		st := staticMem(t, w, 1)
		x := symMake[int64](t, st, 4)
		right, left := (pe+1)%n, (pe+n-1)%n
		require.True(t, shmem.AddrAccessible(w, x, right))
		require.False(t, shmem.AddrAccessible(w, make([]int64, 4), right))
		require.Equal(t, &x[0], &shmem.Ptr(w, x, pe)[0], "this PE's own copy is x")
		p := shmem.Ptr(w, x[1:3], right)
		require.Len(t, p, 2)
		p[1] = int64(100 + pe)
		require.NoError(t, w.BarrierAll())
		require.Equal(t, int64(100+left), x[2], "the left neighbour stored through Ptr")
		require.Nil(t, shmem.Ptr(w, make([]int64, 4), right))
		require.NoError(t, w.BarrierAll())
	})
}

// Buffers outside the heap and every registered segment are still
// refused, naming the array.
func TestStaticCollectivesRefuseOtherMemory(t *testing.T) {
	world(t, 2, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		st := staticMem(t, w, 1)
		ps := symMake[int64](t, st, shmem.SyncSize)
		dest := symMake[int64](t, st, 8)
		all := shmem.ActiveSet{Start: 0, LogStride: 0, Size: 2}
		err = w.BarrierActiveSet(all, make([]int64, shmem.SyncSize))
		require.ErrorIs(t, err, shmem.ErrOutOfBounds)
		require.ErrorContains(t, err, "pSync")
		require.ErrorContains(t, err, "static data")
		err = shmem.SumToAll(w, dest[:1], []int64{1}, all, make([]int64, shmem.ReduceMinWrkdataSize), ps)
		require.ErrorIs(t, err, shmem.ErrOutOfBounds)
		require.ErrorContains(t, err, "pWrk")
		require.ErrorIs(t, shmem.BroadcastActiveSet(w, make([]int64, 1), []int64{1}, 0, all, ps), shmem.ErrOutOfBounds)
		require.ErrorIs(t, shmem.FCollect(w.TeamWorld(), make([]int64, 2), []int64{1}), shmem.ErrOutOfBounds)
		var lock int64
		require.ErrorIs(t, shmem.SetLock(w, &lock), shmem.ErrOutOfBounds)
		require.NoError(t, w.BarrierAll())
		for i, v := range ps {
			require.Equal(t, shmem.SyncValue, v, "pSync word %d after refused calls", i)
		}
	})
}
