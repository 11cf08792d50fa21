package conformance

import (
	"os"
	"sync/atomic"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/shmem"
)

// Memory a program already has (a C program's data and bss) registered
// as a symmetric segment beside the heap: its contents are kept, peers
// reach it as they reach the heap, and bad memory is refused alike on
// every PE.
func registerCases() []Case {
	return []Case{
		{Name: "Register/StaticData", Needs: rmaCaps | core.CapFetchAtomic, Shmem: caseRegisterStatic},
		{Name: "Register/Collectives", Needs: lockCaps, Shmem: caseRegisterCollectives},
		{Name: "Register/BadInput", Needs: rmaCaps, Shmem: caseRegisterBadInput},
		{Name: "Register/Core", Needs: core.CapRMA, Core: caseRegisterCore},
	}
}

// staticMemory is pages of memory the test already has, as a data
// segment is: page-aligned, outside every region, holding contents of
// its own. It is never unmapped: registered memory stays the program's,
// and is touched again after the World is gone.
func staticMemory(t *T, pages int) []byte {
	b, err := sys.MapPrivate(pages * os.Getpagesize())
	require.NoError(t, err)
	return b
}

func caseRegisterStatic(t *T, w *shmem.World) {
	left, right := neighbours(w)
	me := w.MyPE()
	page := os.Getpagesize()
	data := staticMemory(t, 2)
	before := pattern(me, len(data), 5)
	copy(data, before)
	addr := mem.Addr(data)

	require.NoError(t, w.RegisterStatic(data))
	require.Equal(t, addr, mem.Addr(data), "registered memory keeps its address")
	require.Equal(t, before, data, "and its contents")
	require.True(t, shmem.AddrAccessible(w, data[page:], right))
	require.NoError(t, w.BarrierAll()) // every PE has checked its contents

	// The first page: bulk puts, gets and single values, like globals.
	sent := pattern(me, 1000, 9)
	require.NoError(t, shmem.PutMem(w, data[100:1100], sent, right))
	words := mem.Slice[int64](data[page : 2*page])
	require.NoError(t, shmem.P(w, &words[1], int64(me+1000), right))
	require.NoError(t, w.BarrierAll())
	require.Equal(t, pattern(left, 1000, 9), data[100:1100], "the left neighbour's put landed in static data")
	require.Equal(t, int64(left+1000), atomic.LoadInt64(&words[1]))
	got := make([]byte, 1000)
	require.NoError(t, shmem.GetMem(w, got, data[100:1100], right))
	require.Equal(t, sent, got, "a get reads the right neighbour's copy")
	v, err := shmem.G(w, &words[1], right)
	require.NoError(t, err)
	require.Equal(t, int64(me+1000), v)
	require.Equal(t, before[2000:page], data[2000:page], "bytes nobody wrote keep their contents")

	// Atomics from every PE on one word of PE 0's copy.
	require.NoError(t, w.BarrierAll())
	atomic.StoreInt64(&words[0], 0)
	require.NoError(t, w.BarrierAll())
	old, err := shmem.AtomicFetchAdd(w, &words[0], 1, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, old, int64(0))
	require.NoError(t, shmem.AtomicAdd(w, &words[0], 10, 0))
	require.NoError(t, w.BarrierAll())
	if me == 0 {
		require.Equal(t, int64(11*w.NPEs()), atomic.LoadInt64(&words[0]))
	}

	// A wait on static data ends when a peer writes it.
	require.NoError(t, shmem.P(w, &words[2], int64(me+1), right))
	require.NoError(t, shmem.WaitUntil(w, &words[2], shmem.CmpEQ, int64(left+1)))
	require.NoError(t, w.BarrierAll())

	// An address outside every segment names both.
	err = shmem.PutMem(w, make([]byte, 8), []byte("12345678"), right)
	require.ErrorIs(t, err, shmem.ErrOutOfBounds)
	require.ErrorContains(t, err, "symmetric heap")
	require.ErrorContains(t, err, "static data")
}

// caseRegisterCollectives runs collectives and a lock on static data
// alone, as a C program declares them: "static long pSync[...]",
// "static long pWrk[...]", static dest and source arrays, "static long
// lock".
func caseRegisterCollectives(t *T, w *shmem.World) {
	me, n := w.MyPE(), w.NPEs()
	left, right := neighbours(w)
	data := staticMemory(t, 2)
	require.NoError(t, w.RegisterStatic(data))
	// The same layout on every PE, zero like bss.
	const big = 300 // 2400 bytes: more than the team's tree carries
	words := mem.Slice[int64](data)
	next := 0
	take := func(k int) []int64 {
		s := words[next : next+k : next+k]
		next += k
		return s
	}
	barSync := take(shmem.BarrierSyncSize)
	bcastSync := take(shmem.BcastSyncSize)
	redSync := take(shmem.ReduceSyncSize)
	pWrk := take(shmem.ReduceWorkSize(big))
	cells := take(2)
	lock, counter := &take(1)[0], &take(1)[0]
	src, dest := take(big), take(big)
	require.LessOrEqual(t, next*8, len(data))
	all := shmem.ActiveSet{Start: 0, LogStride: 0, Size: n}

	// Barriers over a static pSync, each ordering a put into static data.
	for r := range 20 {
		require.NoError(t, shmem.P(w, &cells[r%2], int64(100*r+me), right))
		require.NoError(t, w.BarrierActiveSet(all, barSync))
		require.Equal(t, int64(100*r+left), atomic.LoadInt64(&cells[r%2]), "barrier %d", r)
	}

	// The 1.4 broadcast and sum, every array static.
	for i := range src {
		src[i] = int64(1000*me + i)
	}
	root := n - 1
	require.NoError(t, shmem.BroadcastActiveSet(w, dest[:8], src[:8], root, all, bcastSync))
	if me != root {
		for i := range 8 {
			require.Equal(t, int64(1000*root+i), dest[i], "active-set broadcast element %d", i)
		}
	}
	require.NoError(t, w.BarrierActiveSet(all, barSync))
	require.NoError(t, shmem.SumToAll(w, dest, src, all, pWrk, redSync))
	for i := range big {
		require.Equal(t, int64(1000*n*(n-1)/2+n*i), dest[i], "sum_to_all element %d", i)
	}
	require.NoError(t, w.BarrierActiveSet(all, barSync))
	for i, v := range [][]int64{barSync, bcastSync, redSync} {
		require.Equal(t, make([]int64, len(v)), v, "pSync %d is back at SyncValue", i)
	}

	// The team forms, dest static.
	tm := w.TeamWorld()
	require.NoError(t, shmem.Broadcast(tm, dest, src, 0))
	for i := range big {
		require.Equal(t, int64(i), dest[i], "team broadcast element %d", i)
	}
	require.NoError(t, shmem.SumReduce(tm, dest, src))
	for i := range big {
		require.Equal(t, int64(1000*n*(n-1)/2+n*i), dest[i], "team sum element %d", i)
	}

	// A static lock guards a static counter on PE 0.
	const rounds = 20
	for range rounds {
		require.NoError(t, shmem.SetLock(w, lock))
		v, err := shmem.G(w, counter, 0)
		require.NoError(t, err)
		require.NoError(t, shmem.P(w, counter, v+1, 0))
		require.NoError(t, shmem.ClearLock(w, lock))
	}
	require.NoError(t, w.BarrierAll())
	if me == 0 {
		require.Equal(t, int64(n*rounds), atomic.LoadInt64(counter))
	}
	require.NoError(t, w.BarrierAll())
}

func caseRegisterBadInput(t *T, w *shmem.World) {
	me := w.MyPE()
	page := os.Getpagesize()
	data := staticMemory(t, 3)

	err := w.RegisterStatic(data[8 : page+8])
	require.ErrorIs(t, err, core.ErrInvalid, "an unaligned start is refused on every PE")
	require.ErrorContains(t, err, "page boundary")

	err = w.RegisterStatic(data[:page+100])
	require.ErrorIs(t, err, core.ErrInvalid, "a partial page is refused on every PE")
	require.ErrorContains(t, err, "whole number")

	if w.NPEs() > 1 {
		n := page
		if me == 0 {
			n = 2 * page
		}
		err = w.RegisterStatic(data[:n])
		require.ErrorIs(t, err, core.ErrInvalid, "lengths that differ are refused on every PE")
		require.ErrorContains(t, err, "different sizes")
		require.ErrorContains(t, err, "PE 0")
	}

	// A failure leaves the job able to register, and the memory intact.
	copy(data, "still here")
	require.NoError(t, w.RegisterStatic(data[:page]))
	require.Equal(t, "still here", string(data[:10]))
	_, right := neighbours(w)
	require.NoError(t, shmem.PutMem(w, data[64:72], []byte("from pe!"), right))
	require.NoError(t, w.BarrierAll())
	require.Equal(t, "from pe!", string(data[64:72]))
}

func caseRegisterCore(t *T, j CoreJob) {
	d, info := j.Domain, j.Info
	me, n := d.Rank(), d.Size()
	right, left := (me+1)%n, (me+n-1)%n
	data := staticMemory(t, 4)
	before := pattern(me, len(data), 3)
	copy(data, before)

	_, err := d.RegisterRegion(data[4096/2:])
	if os.Getpagesize() <= 4096 {
		require.ErrorIs(t, err, core.ErrInvalid, "an unaligned start")
	}
	r, err := d.RegisterRegion(data)
	require.NoError(t, err)
	require.Equal(t, mem.Addr(data), mem.Addr(r.Local()), "Local is the registered memory")
	require.Len(t, r.Local(), len(data))
	require.Equal(t, before, data, "registration keeps the contents")
	require.NoError(t, j.Boot.Barrier())

	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	sent := pattern(me, 5000, 1)
	require.NoError(t, ep.Put(right, r, 3000, sent))
	require.NoError(t, ep.PutValue(right, r, 16, uint64(me+7), 8))
	require.NoError(t, ep.Quiet())
	require.NoError(t, j.Boot.Barrier())
	require.Equal(t, pattern(left, 5000, 1), data[3000:8000])
	require.Equal(t, uint64(left+7), mem.LoadValue(data, 16, 8))
	got := make([]byte, 5000)
	require.NoError(t, ep.Get(right, r, 3000, got))
	require.Equal(t, sent, got)
	require.ErrorIs(t, ep.Put(right, r, len(data)-4, make([]byte, 8)), core.ErrOutOfBounds)
	if info.Caps.Has(core.CapFetchAtomic) {
		require.NoError(t, j.Boot.Barrier())
		_, err := ep.FetchAtomic(right, r, 24, core.AtomicAdd, core.Uint64, 5, 0)
		require.NoError(t, err)
		require.NoError(t, ep.Quiet())
		require.NoError(t, j.Boot.Barrier())
		require.Equal(t, mem.LoadValue(before, 24, 8)+5, mem.LoadValue(data, 24, 8), "an atomic adds to what was there")
	}
	require.NoError(t, ep.Close())
}
