package conformance

import (
	"slices"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

const rmaCaps = core.CapRMA | core.CapAtomic

// Cases returns the suite, in the order it runs. Each family's cases live
// in a file of their own and join the list with one append below.
func Cases() []Case {
	cases := []Case{
		{Name: "PutGet/Sizes", Needs: rmaCaps, Shmem: casePutGetSizes},
		{Name: "PutGet/Typed", Needs: rmaCaps, Shmem: casePutGetTyped},
		{Name: "PutGet/NonBlocking", Needs: rmaCaps, Shmem: caseNonBlocking},
		{Name: "Quiet/MakesPutsVisible", Needs: rmaCaps, Shmem: caseQuietVisibility},
		{Name: "Fence/OrdersPuts", Needs: rmaCaps, Shmem: caseFenceOrder},
		{Name: "Fence/WithinContext", Needs: rmaCaps | core.CapAtomic, Shmem: caseFenceWithinContext},
		{Name: "Atomic/FetchAddContention", Needs: rmaCaps | core.CapFetchAtomic, Shmem: caseFetchAddContention},
		{Name: "Atomic/CompareSwapElection", Needs: rmaCaps | core.CapCompareSwap, Shmem: caseCompareSwapElection},
		{Name: "Atomic/EveryOpAndType", Needs: rmaCaps | core.CapFetchAtomic | core.CapCompareSwap, Shmem: caseAtomicOps},
		{Name: "Atomic/Float", Needs: rmaCaps | core.CapFetchAtomic | core.CapAtomicFloat, Shmem: caseAtomicFloat},
		{Name: "Barrier/ManyRounds", Needs: rmaCaps, Shmem: caseBarrierRounds},
		{Name: "Wait/PingPong", Needs: rmaCaps, Shmem: casePingPong},
		{Name: "Memory/Symmetric", Needs: rmaCaps, Shmem: caseMallocSymmetric},
		{Name: "Memory/AllocationQuietsDefaultContext", Needs: rmaCaps, Shmem: caseMallocQuiets},
		{Name: "Memory/Mismatch", Needs: rmaCaps, Shmem: caseMallocMismatch},
		{Name: "Memory/Exhausted", Needs: rmaCaps, Shmem: caseMallocExhausted},
		{Name: "Context/OwnQuiet", Needs: rmaCaps, Shmem: caseContexts},
		{Name: "Ptr/DirectAccess", Needs: rmaCaps, Shmem: casePtr},
		{Name: "Errors/BadInput", Needs: rmaCaps, Shmem: caseBadInput},
		{Name: "Core/RoundTrip", Needs: core.CapRMA, Core: caseCoreRoundTrip},
		{Name: "Core/BadInput", Needs: core.CapRMA, Core: caseCoreBadInput},
	}
	cases = append(cases, rmaCases()...)
	cases = append(cases, signalCases()...)
	cases = append(cases, scanCases()...)
	cases = append(cases, blockedCases()...)
	cases = append(cases, v16Cases()...)
	cases = append(cases, waitCases()...)
	cases = append(cases, lockCases()...)
	cases = append(cases, memoryCases()...)
	cases = append(cases, alignCases()...)
	cases = append(cases, ctxCases()...)
	cases = append(cases, threadCases()...)
	cases = append(cases, teamCases()...)
	cases = append(cases, collCases()...)
	cases = append(cases, activeSetCases()...)
	cases = append(cases, quietMTCases()...)
	cases = append(cases, flowCases()...)
	cases = append(cases, registerCases()...)
	cases = append(cases, orderCases()...)
	cases = append(cases, finalizeCases()...)
	cases = append(cases, capsCases()...)
	return cases
}

func neighbours(w *shmem.World) (left, right int) {
	n := w.NPEs()
	return (w.MyPE() + n - 1) % n, (w.MyPE() + 1) % n
}

// pattern is a byte sequence that differs by sender, size and position, so
// a misplaced, truncated or stale byte shows.
func pattern(sender, size, seed int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7 + sender*31 + size*13 + seed)
	}
	return b
}

// Put and get round trips at sizes from 0 to 1 MiB + 3 bytes, at unaligned
// offsets: every PE puts to its right neighbour and reads back from it.
func casePutGetSizes(t *T, w *shmem.World) {
	left, right := neighbours(w)
	sizes := []int{0, 1, 7, 8, 4096, 1<<20 + 3}
	offsets := []int{0, 1, 3, 13}
	buf, err := shmem.Malloc[byte](w, 1<<20+3+16)
	require.NoError(t, err)
	for _, size := range sizes {
		for _, off := range offsets {
			seed := off
			sent := pattern(w.MyPE(), size, seed)
			require.NoError(t, shmem.Put(w, buf[off:off+size], sent, right), "put %d bytes at %d", size, off)
			require.NoError(t, w.BarrierAll())
			want := pattern(left, size, seed)
			if !slices.Equal(buf[off:off+size], want) {
				t.Fatalf("put of %d bytes at offset %d from PE %d: data differs", size, off, left)
			}
			back := make([]byte, size)
			require.NoError(t, shmem.Get(w, back, buf[off:off+size], right), "get %d bytes at %d", size, off)
			if !slices.Equal(back, sent) {
				t.Fatalf("get of %d bytes at offset %d from PE %d: data differs", size, off, right)
			}
			require.NoError(t, w.BarrierAll())
		}
	}
	require.NoError(t, shmem.Free(w, buf))
}

// putGetTyped moves n elements of T made by mk(sender, index) with Put,
// P, Get and G, and checks each arrives whole.
func putGetTyped[E shmem.Elem](t *T, w *shmem.World, n int, mk func(pe, i int) E) {
	left, right := neighbours(w)
	me := w.MyPE()
	buf, err := shmem.Malloc[E](w, n+1)
	require.NoError(t, err)
	mine := make([]E, n)
	for i := range mine {
		mine[i] = mk(me, i)
	}
	require.NoError(t, shmem.Put(w, buf[:n], mine, right))
	require.NoError(t, shmem.P(w, &buf[n], mk(me, n), right))
	require.NoError(t, w.BarrierAll())
	for i := range n {
		require.Equal(t, mk(left, i), buf[i], "element %d of %T from PE %d", i, buf[i], left)
	}
	require.Equal(t, mk(left, n), buf[n], "P of %T from PE %d", buf[n], left)
	got, err := shmem.G(w, &buf[n], right)
	require.NoError(t, err)
	require.Equal(t, mk(me, n), got, "G of %T from PE %d", got, right)
	back := make([]E, n)
	require.NoError(t, shmem.Get(w, back, buf[:n], right))
	require.Equal(t, mine, back)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, buf))
}

// Put, Get, P and G for every element type, the 16-byte ones included.
func casePutGetTyped(t *T, w *shmem.World) {
	const n = 5
	putGetTyped(t, w, n, func(pe, i int) int8 { return int8(pe*7 - i) })
	putGetTyped(t, w, n, func(pe, i int) int16 { return int16(pe*1000 - i) })
	putGetTyped(t, w, n, func(pe, i int) int32 { return int32(pe<<20 - i) })
	putGetTyped(t, w, n, func(pe, i int) int64 { return int64(pe)<<40 - int64(i) })
	putGetTyped(t, w, n, func(pe, i int) int { return pe<<40 - i })
	putGetTyped(t, w, n, func(pe, i int) uint8 { return uint8(200 + pe*10 + i) })
	putGetTyped(t, w, n, func(pe, i int) uint16 { return uint16(60000 + pe*100 + i) })
	putGetTyped(t, w, n, func(pe, i int) uint32 { return 1<<31 + uint32(pe<<8+i) })
	putGetTyped(t, w, n, func(pe, i int) uint64 { return 1<<63 + uint64(pe<<8+i) })
	putGetTyped(t, w, n, func(pe, i int) uintptr { return uintptr(pe<<8 + i) })
	putGetTyped(t, w, n, func(pe, i int) float32 { return float32(pe) + float32(i)/4 - 1e6 })
	putGetTyped(t, w, n, func(pe, i int) float64 { return float64(pe)*1e300 - float64(i) })
	putGetTyped(t, w, n, func(pe, i int) complex64 { return complex(float32(pe), -float32(i)) })
	putGetTyped(t, w, n, func(pe, i int) complex128 { return complex(float64(pe)*1e200, float64(i)) })
}

// Non-blocking puts and gets complete at quiet.
func caseNonBlocking(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const n, chunk = 64, 256
	buf, err := shmem.Malloc[byte](w, n*chunk)
	require.NoError(t, err)
	srcs := make([][]byte, n)
	for i := range srcs {
		srcs[i] = pattern(w.MyPE(), chunk, i)
		require.NoError(t, shmem.PutNBI(w, buf[i*chunk:(i+1)*chunk], srcs[i], right))
	}
	require.NoError(t, w.Quiet())
	require.NoError(t, w.BarrierAll())
	for i := range n {
		if !slices.Equal(buf[i*chunk:(i+1)*chunk], pattern(left, chunk, i)) {
			t.Fatalf("non-blocking put %d from PE %d: data differs", i, left)
		}
	}
	dsts := make([][]byte, n)
	for i := range dsts {
		dsts[i] = make([]byte, chunk)
		require.NoError(t, shmem.GetNBI(w, dsts[i], buf[i*chunk:(i+1)*chunk], right))
	}
	require.NoError(t, w.Quiet())
	for i := range n {
		if !slices.Equal(dsts[i], srcs[i]) {
			t.Fatalf("non-blocking get %d from PE %d: data differs", i, right)
		}
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, buf))
}

// A put followed by quiet and a flag is visible to the target once it sees
// the flag: the producer/consumer pattern every program relies on.
func caseQuietVisibility(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const rounds, size = 50, 4096
	data, err := shmem.Malloc[byte](w, size)
	require.NoError(t, err)
	flag, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	for r := 1; r <= rounds; r++ {
		require.NoError(t, shmem.Put(w, data, pattern(w.MyPE(), size, r), right))
		require.NoError(t, w.Quiet())
		require.NoError(t, shmem.AtomicSet(w, &flag[0], int64(r), right))
		require.NoError(t, shmem.WaitUntil(w, &flag[0], shmem.CmpGE, int64(r)))
		if !slices.Equal(data, pattern(left, size, r)) {
			t.Fatalf("round %d: flag from PE %d arrived before its data", r, left)
		}
		// Nobody overwrites data before its reader has checked it.
		require.NoError(t, w.BarrierAll())
	}
}

// Puts separated by fences land in order: the target never sees a flag
// before the value put ahead of it.
func caseFenceOrder(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const rounds = 200
	vals, err := shmem.Malloc[int64](w, 8)
	require.NoError(t, err)
	flag, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	for r := int64(1); r <= rounds; r++ {
		require.NoError(t, shmem.Put(w, vals, []int64{r, r, r, r, r, r, r, r}, right))
		require.NoError(t, w.Fence())
		require.NoError(t, shmem.P(w, &flag[0], r, right))
		require.NoError(t, shmem.WaitUntil(w, &flag[0], shmem.CmpGE, r))
		for i, v := range vals {
			if v < r {
				t.Fatalf("round %d: flag from PE %d overtook element %d (holds %d)", r, left, i, v)
			}
		}
		require.NoError(t, w.SyncAll())
	}
	require.NoError(t, w.BarrierAll())
}

// N PEs each do M fetch-adds on one cell: the cell ends at exactly N*M and
// every fetched value is distinct.
func caseFetchAddContention(t *T, w *shmem.World) {
	const m = 300
	n := w.NPEs()
	cell, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	seen, err := shmem.Malloc[int64](w, n*m)
	require.NoError(t, err)
	olds := make([]int64, m)
	for i := range olds {
		olds[i], err = shmem.AtomicFetchAdd(w, &cell[0], 1, 0)
		require.NoError(t, err)
	}
	require.NoError(t, shmem.Put(w, seen[w.MyPE()*m:(w.MyPE()+1)*m], olds, 0))
	require.NoError(t, w.BarrierAll())
	if w.MyPE() == 0 {
		require.Equal(t, int64(n*m), cell[0], "final value of the contended cell")
		all := slices.Clone(seen)
		slices.Sort(all)
		for i, v := range all {
			if v != int64(i) {
				t.Fatalf("fetch-add results are not 0..%d: position %d holds %d", n*m-1, i, v)
			}
		}
	}
	// Non-fetching adds from everyone, then a fetch reads the total.
	require.NoError(t, w.BarrierAll())
	for range m {
		require.NoError(t, shmem.AtomicAdd(w, &cell[0], 2, 0))
		require.NoError(t, shmem.AtomicInc(w, &cell[0], 0))
	}
	require.NoError(t, w.BarrierAll())
	got, err := shmem.AtomicFetch(w, &cell[0], 0)
	require.NoError(t, err)
	require.Equal(t, int64(n*m*4), got)
	require.NoError(t, w.BarrierAll())
}

// Every PE tries to swap its number into a cell holding -1: exactly one
// wins, in every round, whichever PE holds the cell.
func caseCompareSwapElection(t *T, w *shmem.World) {
	n := w.NPEs()
	cell, err := shmem.Malloc[int32](w, 1)
	require.NoError(t, err)
	wins, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	for round := range 3 * n {
		owner := round % n
		if w.MyPE() == owner {
			cell[0] = -1
			wins[0] = 0
		}
		require.NoError(t, w.BarrierAll())
		old, err := shmem.AtomicCompareSwap(w, &cell[0], -1, int32(w.MyPE()), owner)
		require.NoError(t, err)
		if old == -1 {
			require.NoError(t, shmem.AtomicInc(w, &wins[0], owner))
		} else if old < 0 || int(old) >= n {
			t.Fatalf("round %d: compare-swap returned %d, neither -1 nor a PE", round, old)
		}
		require.NoError(t, w.BarrierAll())
		if w.MyPE() == owner {
			require.Equal(t, int64(1), wins[0], "round %d: winners", round)
			require.GreaterOrEqual(t, cell[0], int32(0))
		}
		require.NoError(t, w.BarrierAll())
	}
}

func atomicOps[V shmem.AMOInt](t *T, w *shmem.World) {
	_, right := neighbours(w)
	x, err := shmem.Malloc[V](w, 1)
	require.NoError(t, err)
	target := &x[0]
	require.NoError(t, shmem.AtomicSet(w, target, V(0x5a), right))
	require.NoError(t, w.BarrierAll()) // everyone's right has been set

	steps := []struct {
		name string
		do   func() (V, error)
		old  V // value before
	}{
		{"fetch", func() (V, error) { return shmem.AtomicFetch(w, target, right) }, 0x5a},
		{"fetch-add", func() (V, error) { return shmem.AtomicFetchAdd(w, target, 5, right) }, 0x5a},
		{"fetch-inc", func() (V, error) { return shmem.AtomicFetchInc(w, target, right) }, 0x5f},
		{"swap", func() (V, error) { return shmem.AtomicSwap(w, target, 0x3c, right) }, 0x60},
		{"cswap miss", func() (V, error) { return shmem.AtomicCompareSwap(w, target, 1, 2, right) }, 0x3c},
		{"cswap hit", func() (V, error) { return shmem.AtomicCompareSwap(w, target, 0x3c, 0xff, right) }, 0x3c},
		{"fetch-and", func() (V, error) { return shmem.AtomicFetchAnd(w, target, 0x0f, right) }, 0xff},
		{"fetch-or", func() (V, error) { return shmem.AtomicFetchOr(w, target, 0x30, right) }, 0x0f},
		{"fetch-xor", func() (V, error) { return shmem.AtomicFetchXor(w, target, 0x11, right) }, 0x3f},
		{"fetch after xor", func() (V, error) { return shmem.AtomicFetch(w, target, right) }, 0x2e},
	}
	for _, s := range steps {
		got, err := s.do()
		require.NoError(t, err, s.name)
		require.Equal(t, s.old, got, "%s on %T: old value", s.name, got)
	}
	for _, s := range []struct {
		name string
		do   func() error
		want V
	}{
		{"add", func() error { return shmem.AtomicAdd(w, target, 2, right) }, 0x30},
		{"inc", func() error { return shmem.AtomicInc(w, target, right) }, 0x31},
		{"and", func() error { return shmem.AtomicAnd(w, target, 0x21, right) }, 0x21},
		{"or", func() error { return shmem.AtomicOr(w, target, 0x0c, right) }, 0x2d},
		{"xor", func() error { return shmem.AtomicXor(w, target, 0x2d, right) }, 0},
		{"set", func() error { return shmem.AtomicSet(w, target, ^V(0), right) }, ^V(0)},
	} {
		require.NoError(t, s.do(), s.name)
		require.NoError(t, w.Quiet())
		got, err := shmem.AtomicFetch(w, target, right)
		require.NoError(t, err)
		require.Equal(t, s.want, got, "%s on %T: new value", s.name, got)
	}
	// Wrap-around: adding to the all-ones value gives zero plus the addend.
	old, err := shmem.AtomicFetchAdd(w, target, 3, right)
	require.NoError(t, err)
	require.Equal(t, ^V(0), old)
	got, err := shmem.AtomicFetch(w, target, right)
	require.NoError(t, err)
	require.Equal(t, V(2), got)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, x))
}

// Every standard AMO on every standard AMO type, with exact old and new values.
func caseAtomicOps(t *T, w *shmem.World) {
	atomicOps[int32](t, w)
	atomicOps[int64](t, w)
	atomicOps[uint32](t, w)
	atomicOps[uint64](t, w)
	atomicOps[int](t, w)
	atomicOps[uint](t, w)
	atomicOps[uintptr](t, w)
}

func atomicFloat[V float32 | float64](t *T, w *shmem.World) {
	_, right := neighbours(w)
	x, err := shmem.Malloc[V](w, 1)
	require.NoError(t, err)
	require.NoError(t, shmem.AtomicSet(w, &x[0], V(1.5), right))
	require.NoError(t, w.BarrierAll())
	got, err := shmem.AtomicFetch(w, &x[0], right)
	require.NoError(t, err)
	require.Equal(t, V(1.5), got)
	old, err := shmem.AtomicSwap(w, &x[0], V(-2.25), right)
	require.NoError(t, err)
	require.Equal(t, V(1.5), old)
	got, err = shmem.AtomicFetch(w, &x[0], right)
	require.NoError(t, err)
	require.Equal(t, V(-2.25), got)
	require.NoError(t, w.BarrierAll())
}

// Fetch, set and swap on float32 and float64.
func caseAtomicFloat(t *T, w *shmem.World) {
	atomicFloat[float32](t, w)
	atomicFloat[float64](t, w)
}

// Many barriers back to back, each checked: a put before the barrier is
// visible after it, and nobody gets ahead.
func caseBarrierRounds(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const rounds = 300
	slot, err := shmem.Malloc[int64](w, 2)
	require.NoError(t, err)
	for r := int64(1); r <= rounds; r++ {
		require.NoError(t, shmem.P(w, &slot[r%2], r, right))
		require.NoError(t, w.BarrierAll())
		if got := slot[r%2]; got != r {
			t.Fatalf("round %d: slot from PE %d holds %d after the barrier", r, left, got)
		}
	}
	for r := 0; r < rounds; r++ {
		require.NoError(t, w.SyncAll())
	}
}

// PEs 0 and 1 play ping-pong with P and WaitUntil; Test sees each ball.
func casePingPong(t *T, w *shmem.World) {
	const rounds = 200
	ball, err := shmem.Malloc[int32](w, 1)
	require.NoError(t, err)
	me := w.MyPE()
	if me <= 1 {
		other := 1 - me
		for r := int32(1); r <= rounds; r++ {
			if (r%2 == 1) == (me == 0) {
				require.NoError(t, shmem.P(w, &ball[0], r, other))
			} else {
				require.NoError(t, shmem.WaitUntil(w, &ball[0], shmem.CmpEQ, r))
				ok, err := shmem.Test(w, &ball[0], shmem.CmpGE, r)
				require.NoError(t, err)
				require.True(t, ok)
			}
		}
	}
	ok, err := shmem.Test(w, &ball[0], shmem.CmpGT, rounds)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, w.BarrierAll())
}

// Allocations land at the same offset on every PE, freed memory is reused
// and comes back zeroed.
func caseMallocSymmetric(t *T, w *shmem.World) {
	n := w.NPEs()
	offs, err := shmem.Malloc[uint64](w, n*8)
	require.NoError(t, err)
	var bufs [][]byte
	for i, size := range []int{1, 100, 4096, 65536, 3, 1 << 20} {
		b, err := shmem.Malloc[byte](w, size)
		require.NoError(t, err)
		require.Len(t, b, size)
		for j := range b {
			if b[j] != 0 { // one assertion per byte would cost seconds on a megabyte
				require.Zero(t, b[j], "fresh allocation of %d bytes is not zero at %d", size, j)
			}
		}
		offs[w.MyPE()*8] = uint64(mem.Addr(b) - mem.Addr(offs))
		require.NoError(t, shmem.Put(w, offs[w.MyPE()*8+i%7+1:w.MyPE()*8+i%7+2], offs[w.MyPE()*8:w.MyPE()*8+1], 0))
		require.NoError(t, w.BarrierAll())
		if w.MyPE() == 0 {
			for pe := 1; pe < n; pe++ {
				require.Equal(t, offs[i%7+1], offs[pe*8+i%7+1], "allocation %d: PE %d got another offset than PE 0", i, pe)
			}
		}
		for j := range b {
			b[j] = 0xee
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		require.NoError(t, shmem.Free(w, b))
	}
	again, err := shmem.Malloc[byte](w, 4096)
	require.NoError(t, err)
	for j := range again {
		if again[j] != 0 {
			require.Zero(t, again[j], "reused allocation is not zero at %d", j)
		}
	}
	a2, err := shmem.Align[int64](w, 4096, 3)
	require.NoError(t, err)
	require.Zero(t, (mem.Addr(a2)-mem.Addr(offs))%4096)
	z, err := shmem.Malloc[int64](w, 0)
	require.NoError(t, err)
	require.Nil(t, z)
	require.NoError(t, shmem.Free(w, again))
	require.NoError(t, shmem.Free(w, a2))
	require.NoError(t, shmem.Free[int64](w, nil))
}

// A PE that asks for another size than the others gets an error, and so do
// the others; the heap stays usable.
func caseMallocMismatch(t *T, w *shmem.World) {
	size := 64
	if w.MyPE() == w.NPEs()-1 {
		size = 128
	}
	b, err := shmem.Malloc[byte](w, size)
	require.ErrorIs(t, err, shmem.ErrInvalid)
	require.ErrorContains(t, err, "different sizes")
	require.Nil(t, b)
	ok, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err, "the heap must stay usable after a failed Malloc")
	_, right := neighbours(w)
	require.NoError(t, shmem.P(w, &ok[0], 7, right))
	require.NoError(t, w.BarrierAll())
	require.Equal(t, int64(7), ok[0])
}

// Malloc past the heap is ErrNoMemory with the sizes.
func caseMallocExhausted(t *T, w *shmem.World) {
	b, err := shmem.Malloc[byte](w, w.HeapSize()+1)
	require.ErrorIs(t, err, shmem.ErrNoMemory)
	var ae *shmem.AllocError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, w.HeapSize()+1, ae.Size)
	require.Nil(t, b)
	b, err = shmem.Malloc[byte](w, 1024)
	require.NoError(t, err)
	require.NoError(t, shmem.Free(w, b))
}

// A context's operations complete at its own quiet.
func caseContexts(t *T, w *shmem.World) {
	left, right := neighbours(w)
	ctx, err := w.NewContext(shmem.ContextOptions{Private: true})
	require.NoError(t, err)
	buf, err := shmem.Malloc[int64](w, 16)
	require.NoError(t, err)
	src := make([]int64, 16)
	for i := range src {
		src[i] = int64(w.MyPE()*100 + i)
	}
	require.NoError(t, shmem.PutNBI(ctx, buf, src, right))
	require.NoError(t, ctx.Quiet())
	require.NoError(t, w.BarrierAll())
	for i, v := range buf {
		require.Equal(t, int64(left*100+i), v)
	}
	require.NoError(t, ctx.Destroy())
	require.NoError(t, ctx.Destroy(), "destroy is idempotent")
	require.NoError(t, w.BarrierAll())
}

// Ptr gives direct access where the provider maps peers, and nil elsewhere.
func casePtr(t *T, w *shmem.World) {
	_, right := neighbours(w)
	buf, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err)
	require.Equal(t, buf, shmem.Ptr(w, buf, w.MyPE()))
	require.Nil(t, shmem.Ptr(w, []int64{1}, right), "a local Go slice is not symmetric")
	require.Nil(t, shmem.Ptr(w, buf, w.NPEs()), "PE out of range")
	p := shmem.Ptr(w, buf, right)
	if !w.ProviderInfo().Caps.Has(core.CapDirectAccess) {
		require.Nil(t, p)
		return
	}
	// Direct access reaches the PEs of this host (TeamShared), and nil
	// the others: a job that spans hosts maps only its host's.
	sh := w.TeamShared()
	for pe := range w.NPEs() {
		if shmem.Translate(w.TeamWorld(), pe, sh) < 0 {
			require.Nil(t, shmem.Ptr(w, buf, pe), "PE %d on another host", pe)
		}
	}
	left := shmem.Translate(sh, (sh.MyPE()+sh.NPEs()-1)%sh.NPEs(), w.TeamWorld())
	right = shmem.Translate(sh, (sh.MyPE()+1)%sh.NPEs(), w.TeamWorld())
	p = shmem.Ptr(w, buf, right)
	require.Len(t, p, 4)
	p[1] = int64(1000 + w.MyPE())
	require.NoError(t, w.BarrierAll())
	require.Equal(t, int64(1000+left), buf[1])
	require.True(t, shmem.AddrAccessible(w, buf, right))
	require.True(t, w.PEAccessible(right))
	require.False(t, w.PEAccessible(-1))
	require.NoError(t, w.BarrierAll())
}

// Bad input gets the named error and touches nothing.
func caseBadInput(t *T, w *shmem.World) {
	n := w.NPEs()
	_, right := neighbours(w)
	buf, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err)
	src := []int64{1, 2}

	for _, pe := range []int{n, -1, 1 << 30} {
		err := shmem.Put(w, buf[:2], src, pe)
		require.ErrorIs(t, err, shmem.ErrInvalid, "put to PE %d", pe)
		var pee *core.PEError
		require.ErrorAs(t, err, &pee)
		require.Equal(t, pe, pee.PE)
		_, err = shmem.AtomicFetchAdd(w, &buf[0], 1, pe)
		require.ErrorIs(t, err, shmem.ErrInvalid, "fetch-add on PE %d", pe)
		_, err = shmem.G(w, &buf[0], pe)
		require.ErrorIs(t, err, shmem.ErrInvalid, "g from PE %d", pe)
	}

	local := make([]int64, 2)
	err = shmem.Put(w, local, src, right)
	require.ErrorIs(t, err, shmem.ErrOutOfBounds, "put to a Go slice that is not symmetric")
	var ae *shmem.AddrError
	require.ErrorAs(t, err, &ae)
	require.ErrorIs(t, shmem.Get(w, local, local, right), shmem.ErrOutOfBounds)
	require.ErrorIs(t, shmem.P(w, &local[0], 1, right), shmem.ErrOutOfBounds)
	require.ErrorIs(t, shmem.Put(w, buf[:1], src, right), shmem.ErrInvalid, "destination shorter than source")

	raw := mem.Bytes(buf)
	odd := mem.Slice[int64](raw[4:12])
	_, err = shmem.AtomicFetchAdd(w, &odd[0], 1, right)
	require.ErrorIs(t, err, shmem.ErrInvalid, "misaligned atomic")
	var ale *core.AlignError
	require.ErrorAs(t, err, &ale)

	require.ErrorIs(t, shmem.WaitUntil(w, &buf[0], shmem.Cmp(99), 0), shmem.ErrInvalid)

	// Zero-length transfers are no-ops, even with nil buffers.
	require.NoError(t, shmem.Put(w, buf[:0], src[:0], right))
	require.NoError(t, shmem.Put[int64](w, nil, nil, right))
	require.NoError(t, shmem.Get[int64](w, nil, buf, right))
	require.NoError(t, w.BarrierAll())
	for i, v := range buf {
		require.Zero(t, v, "element %d changed by a failed operation", i)
	}
}

// The provider's endpoint, without shmem: put, get, values and a fetching
// atomic between neighbours, and a counter that balances.
func caseCoreRoundTrip(t *T, j CoreJob) {
	d, info := j.Domain, j.Info
	me, n := d.Rank(), d.Size()
	right, left := (me+1)%n, (me+n-1)%n
	r, err := d.NewRegion(1 << 16)
	require.NoError(t, err)
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	sent := pattern(me, 1000, 0)
	require.NoError(t, ep.Put(right, r, 24, sent))
	require.NoError(t, ep.PutValue(right, r, 8, uint64(me+100), 8))
	require.NoError(t, ep.Quiet())
	require.NoError(t, j.Boot.Barrier())
	require.Equal(t, pattern(left, 1000, 0), r.Local()[24:1024])
	v, err := ep.GetValue(right, r, 8, 8)
	require.NoError(t, err)
	require.Equal(t, uint64(me+100), v, "the value this PE put into PE %d", right)
	got := make([]byte, 1000)
	require.NoError(t, ep.Get(right, r, 24, got))
	require.Equal(t, sent, got)
	if info.Caps.Has(core.CapFetchAtomic) {
		old, err := ep.FetchAtomic(right, r, 0, core.AtomicAdd, core.Uint64, 1, 0)
		require.NoError(t, err)
		require.Less(t, old, uint64(n))
	}
	require.Equal(t, ep.Counter().Issued(), ep.Counter().Completed())
	require.NoError(t, ep.Close())
}

// The provider itself rejects bad PEs, offsets, sizes, alignments and
// operations, with the typed errors, and writes nothing.
func caseCoreBadInput(t *T, j CoreJob) {
	d, info := j.Domain, j.Info
	n := d.Size()
	const size = 4096
	r, err := d.NewRegion(size)
	require.NoError(t, err)
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	buf := make([]byte, 16)
	var pee *core.PEError
	require.ErrorAs(t, ep.Put(n, r, 0, buf), &pee)
	require.ErrorAs(t, ep.Get(-1, r, 0, buf), &pee)
	var be *core.BoundsError
	for _, off := range []int{size - 15, size, size + 1, -1, 1 << 40} {
		require.ErrorAs(t, ep.Put(0, r, off, buf), &be, "put at %d", off)
		require.ErrorAs(t, ep.Get(0, r, off, buf), &be, "get at %d", off)
		require.ErrorAs(t, ep.PutNBI(0, r, off, buf), &be, "put-nbi at %d", off)
		require.ErrorAs(t, ep.GetNBI(0, r, off, buf), &be, "get-nbi at %d", off)
	}
	_, err = ep.GetValue(0, r, 0, 3)
	require.ErrorIs(t, err, core.ErrInvalid, "value of 3 bytes")
	require.ErrorIs(t, ep.PutValue(0, r, size-4, 0, 8), core.ErrOutOfBounds)
	if info.Caps.Has(core.CapAtomic) {
		var ale *core.AlignError
		require.ErrorAs(t, ep.Atomic(0, r, 4, core.AtomicAdd, core.Uint64, 1), &ale)
		require.ErrorAs(t, ep.Atomic(0, r, size, core.AtomicAdd, core.Uint32, 1), &be)
		err := ep.Atomic(0, r, 0, core.AtomicOp(99), core.Uint64, 1)
		require.ErrorIs(t, err, core.ErrInvalid)
		_, err = ep.FetchAtomic(0, r, 0, core.AtomicAdd, core.AtomicType(0), 1, 0)
		require.ErrorIs(t, err, core.ErrInvalid)
		if !info.Atomics.Supports(core.AtomicAdd, core.Float64) {
			require.ErrorIs(t, ep.Atomic(0, r, 0, core.AtomicAdd, core.Float64, 1), core.ErrNotSupported)
		}
	}
	require.NoError(t, ep.Quiet())
	require.NoError(t, j.Boot.Barrier())
	require.Equal(t, make([]byte, size), r.Local(), "bad input must not write")
	require.NoError(t, ep.Close())
	require.ErrorIs(t, ep.Put(0, r, 0, buf), core.ErrClosed, "put on a closed endpoint")
}

// OpenSHMEM 1.6 makes plain that a fence is a context's own: the fence of
// a context orders the puts, non-blocking puts and atomics that context
// issued to a PE before it ahead of those it issues to that PE after it.
// Here each PE, on a context of its own and on a team context, puts a
// block without blocking, fences that context and sets a flag through it;
// the target must never see the flag before the block.
func caseFenceWithinContext(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const rounds = 100
	vals, err := shmem.Malloc[int64](w, 64)
	require.NoError(t, err)
	flag, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	own, err := w.NewContext(shmem.ContextOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, own.Destroy()) }()
	team, err := w.TeamWorld().CreateCtx(shmem.ContextOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, team.Destroy()) }()
	src := make([]int64, len(vals))
	r := int64(0)
	for _, ctx := range []*shmem.Context{own, team} {
		for range rounds {
			r++
			for i := range src {
				src[i] = r
			}
			require.NoError(t, shmem.PutNBI(ctx, vals, src, right))
			require.NoError(t, ctx.Fence())
			require.NoError(t, shmem.AtomicSet(ctx, &flag[0], r, right))
			require.NoError(t, shmem.WaitUntil(w, &flag[0], shmem.CmpGE, r))
			for i, v := range vals {
				if v < r {
					t.Fatalf("round %d: the flag from PE %d overtook element %d (holds %d) on one context", r, left, i, v)
				}
			}
			require.NoError(t, ctx.Quiet())
			require.NoError(t, w.SyncAll())
		}
	}
	require.NoError(t, w.BarrierAll())
}
