package conformance

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

func waitCases() []Case {
	return []Case{
		{Name: "Wait/AllAnySome", Needs: rmaCaps, Shmem: caseWaitAllAnySome},
		{Name: "Wait/Vector", Needs: rmaCaps, Shmem: caseWaitVector},
		{Name: "Wait/FairAny", Needs: rmaCaps, MinPEs: 3, Shmem: caseWaitFairAny},
		{Name: "Wait/StatusMask", Needs: rmaCaps, Shmem: caseWaitStatusMask},
		{Name: "Wait/GoroutineStoreWakes", Needs: rmaCaps, Shmem: caseWaitGoroutineStore},
		{Name: "Wait/BadInput", Needs: rmaCaps, Shmem: caseWaitBadInput},
		{Name: "Wait/EmptySet", Needs: rmaCaps, Shmem: caseWaitEmptySet},
	}
}

// exceptMe is a status mask that leaves out this PE's own slot.
func exceptMe(w *shmem.World) []int {
	status := make([]int, w.NPEs())
	status[w.MyPE()] = 1
	return status
}

// Every PE sets its slot in every other PE's array of flags, one after the
// other; each PE waits for any, then some, then all of them, and tests
// agree with what the waits saw.
func caseWaitAllAnySome(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	flags, err := shmem.Malloc[int64](w, n)
	require.NoError(t, err)
	status := exceptMe(w)

	ok, err := shmem.TestAll(w, flags, status, shmem.CmpNE, 0)
	require.NoError(t, err)
	require.False(t, ok, "no flag is set yet")
	i, err := shmem.TestAny(w, flags, status, shmem.CmpNE, 0)
	require.NoError(t, err)
	require.Equal(t, -1, i)
	require.NoError(t, w.BarrierAll())

	// The flags arrive in any order: the first waits may see only some.
	for pe := range n {
		if pe != me {
			require.NoError(t, shmem.AtomicSet(w, &flags[me], int64(me+1), pe))
		}
	}
	any, err := shmem.WaitUntilAny(w, flags, status, shmem.CmpNE, 0)
	require.NoError(t, err)
	require.NotEqual(t, me, any, "the status mask excludes this PE's slot")
	require.Equal(t, int64(any+1), flags[any], "any returned a flag that is not set")

	indices := make([]int, n)
	cnt, err := shmem.WaitUntilSome(w, flags, indices, status, shmem.CmpNE, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, cnt, 1)
	require.True(t, slices.IsSorted(indices[:cnt]))
	for _, i := range indices[:cnt] {
		require.NotEqual(t, me, i)
		require.Equal(t, int64(i+1), flags[i])
	}

	require.NoError(t, shmem.WaitUntilAll(w, flags, status, shmem.CmpGT, 0))
	for pe := range n {
		if pe != me {
			require.Equal(t, int64(pe+1), flags[pe], "flag of PE %d", pe)
		}
	}
	ok, err = shmem.TestAll(w, flags, status, shmem.CmpGT, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = shmem.TestAll(w, flags, nil, shmem.CmpGT, 0)
	require.NoError(t, err)
	require.False(t, ok, "without the mask, this PE's own zero slot fails the test")
	cnt, err = shmem.TestSome(w, flags, indices, nil, shmem.CmpGT, 0)
	require.NoError(t, err)
	require.Equal(t, n-1, cnt)
	require.NotContains(t, indices[:cnt], me)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flags))
}

// The vector forms compare each variable with its own value: PE p adds p+1
// to slot p of every PE, twice, and the waits ask for exactly 2(p+1).
func caseWaitVector(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	vars, err := shmem.Malloc[uint32](w, n)
	require.NoError(t, err)
	want := make([]uint32, n)
	for i := range want {
		want[i] = uint32(2 * (i + 1))
	}
	status := exceptMe(w)
	for range 2 {
		for pe := range n {
			if pe != me {
				require.NoError(t, shmem.AtomicAdd(w, &vars[me], uint32(me+1), pe))
			}
		}
	}
	require.NoError(t, shmem.WaitUntilAllVector(w, vars, status, shmem.CmpEQ, want))
	i, err := shmem.WaitUntilAnyVector(w, vars, status, shmem.CmpEQ, want)
	require.NoError(t, err)
	require.Equal(t, want[i], vars[i])
	indices := make([]int, n)
	cnt, err := shmem.WaitUntilSomeVector(w, vars, indices, status, shmem.CmpGE, want)
	require.NoError(t, err)
	require.Equal(t, n-1, cnt)
	ok, err := shmem.TestAllVector(w, vars, status, shmem.CmpEQ, want)
	require.NoError(t, err)
	require.True(t, ok)
	i, err = shmem.TestAnyVector(w, vars, status, shmem.CmpGT, want)
	require.NoError(t, err)
	require.Equal(t, -1, i, "no variable exceeds its value")
	cnt, err = shmem.TestSomeVector(w, vars, indices, nil, shmem.CmpLT, want)
	require.NoError(t, err)
	require.Equal(t, []int{me}, indices[:cnt], "only this PE's own slot is below its value")
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, vars))
}

// With every flag ready, repeated WaitUntilAny calls rotate over them
// instead of always returning the first: polling is fair.
func caseWaitFairAny(t *T, w *shmem.World) {
	n := w.NPEs()
	flags, err := shmem.Malloc[int64](w, n)
	require.NoError(t, err)
	for i := range flags {
		require.NoError(t, shmem.AtomicSet(w, &flags[i], 1, w.MyPE()))
	}
	// The sets are complete only after a quiet: a provider that carries
	// them elsewhere (a plugin process) may not have applied the last yet.
	require.NoError(t, w.Quiet())
	seen := map[int]int{}
	for range 4 * n {
		i, err := shmem.WaitUntilAny(w, flags, nil, shmem.CmpEQ, 1)
		require.NoError(t, err)
		seen[i]++
	}
	require.Len(t, seen, n, "every ready flag is returned in turn: %v", seen)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flags))
}

// Masked-out and empty sets: any returns -1, some 0, all at once.
func caseWaitStatusMask(t *T, w *shmem.World) {
	flags, err := shmem.Malloc[int32](w, 3)
	require.NoError(t, err)
	all := []int{1, 1, 1}
	require.NoError(t, shmem.WaitUntilAll(w, flags, all, shmem.CmpEQ, 5))
	i, err := shmem.WaitUntilAny(w, flags, all, shmem.CmpEQ, 5)
	require.NoError(t, err)
	require.Equal(t, -1, i)
	cnt, err := shmem.WaitUntilSome(w, flags, make([]int, 3), all, shmem.CmpEQ, 5)
	require.NoError(t, err)
	require.Zero(t, cnt)
	i, err = shmem.WaitUntilAny(w, flags[:0], nil, shmem.CmpEQ, 5)
	require.NoError(t, err)
	require.Equal(t, -1, i)
	// Only the unmasked middle element counts.
	i, err = shmem.WaitUntilAny(w, flags, []int{1, 0, 1}, shmem.CmpEQ, 0)
	require.NoError(t, err)
	require.Equal(t, 1, i)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flags))
}

// A store by one goroutine wakes another goroutine's WaitUntil on the same
// PE, through shmem and through a plain atomic store to the symmetric
// variable alike.
func caseWaitGoroutineStore(t *T, w *shmem.World) {
	flag, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	stores := []func(v int64) error{
		func(v int64) error { return shmem.AtomicSet(w, &flag[0], v, w.MyPE()) },
		func(v int64) error { atomic.StoreInt64(&flag[0], v); return nil },
		func(v int64) error { return shmem.P(w, &flag[0], v, w.MyPE()) },
	}
	for round, store := range stores {
		v := int64(round + 1)
		var waiting atomic.Bool
		var wg sync.WaitGroup
		var werr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			waiting.Store(true)
			werr = shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, v)
		}()
		for !waiting.Load() {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // let the waiter go to sleep
		require.NoError(t, store(v))
		wg.Wait()
		require.NoError(t, werr, "round %d", round)
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flag))
}

func caseWaitBadInput(t *T, w *shmem.World) {
	flags, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err)
	local := make([]int64, 4)
	idx := make([]int, 4)
	require.ErrorIs(t, shmem.WaitUntilAll(w, local, nil, shmem.CmpEQ, 0), shmem.ErrOutOfBounds, "not symmetric")
	require.ErrorIs(t, shmem.WaitUntilAll(w, flags, []int{0}, shmem.CmpEQ, 0), shmem.ErrInvalid, "short status")
	_, err = shmem.WaitUntilAny(w, flags, nil, shmem.Cmp(0), 0)
	require.ErrorIs(t, err, shmem.ErrInvalid, "bad comparison")
	_, err = shmem.WaitUntilSome(w, flags, idx[:2], nil, shmem.CmpEQ, 0)
	require.ErrorIs(t, err, shmem.ErrInvalid, "short indices")
	_, err = shmem.TestSome(w, flags, idx[:2], nil, shmem.CmpEQ, 0)
	require.ErrorIs(t, err, shmem.ErrInvalid, "short indices")
	require.ErrorIs(t, shmem.WaitUntilAllVector(w, flags, nil, shmem.CmpEQ, nil), shmem.ErrInvalid, "no values")
	_, err = shmem.TestAnyVector(w, flags, nil, shmem.CmpEQ, []int64{1})
	require.ErrorIs(t, err, shmem.ErrInvalid, "short values")
	_, err = shmem.TestAll(w, local, nil, shmem.CmpEQ, 0)
	require.ErrorIs(t, err, shmem.ErrOutOfBounds)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flags))
}

// The tests on an empty set, which 1.6 takes up: shmem_test_all returns 1
// when nelems is 0, the wait set being empty. A set whose every element
// status excludes is empty too, and gets the same answer, as
// wait_until_all returns at once on it; test_any finds none and
// test_some none.
func caseWaitEmptySet(t *T, w *shmem.World) {
	flags, err := shmem.Malloc[int64](w, 3)
	require.NoError(t, err)
	all := []int{1, 1, 1}
	for _, c := range []struct {
		what   string
		ivars  []int64
		status []int
	}{{"no elements", flags[:0], nil}, {"every element excluded", flags, all}} {
		ok, err := shmem.TestAll(w, c.ivars, c.status, shmem.CmpEQ, 7)
		require.NoError(t, err)
		require.True(t, ok, "test_all on %s", c.what)
		i, err := shmem.TestAny(w, c.ivars, c.status, shmem.CmpEQ, 7)
		require.NoError(t, err)
		require.Equal(t, -1, i, "test_any on %s", c.what)
		k, err := shmem.TestSome(w, c.ivars, make([]int, 3), c.status, shmem.CmpEQ, 7)
		require.NoError(t, err)
		require.Zero(t, k, "test_some on %s", c.what)
		require.NoError(t, shmem.WaitUntilAll(w, c.ivars, c.status, shmem.CmpEQ, 7), "wait_until_all on %s", c.what)
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flags))
}
