package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

func memoryCases() []Case {
	return []Case{
		{Name: "Memory/Realloc", Needs: rmaCaps, Shmem: caseRealloc},
		{Name: "Memory/Hints", Needs: rmaCaps, Shmem: caseMallocHints},
	}
}

// Realloc keeps the contents, zeroes what it adds, stays symmetric, and
// on exhaustion fails on every PE leaving the old block intact.
func caseRealloc(t *T, w *shmem.World) {
	left, right := neighbours(w)
	me := int64(w.MyPE())
	a, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err)
	// A block after it, so growing cannot happen in place.
	b, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	require.NoError(t, shmem.Put(w, a, []int64{me, me + 1, me + 2, me + 3}, right))
	require.NoError(t, w.BarrierAll())

	a, err = shmem.Realloc(w, a, 1000)
	require.NoError(t, err)
	require.Len(t, a, 1000)
	l := int64(left)
	require.Equal(t, []int64{l, l + 1, l + 2, l + 3}, a[:4], "contents moved")
	for i, v := range a[4:] {
		require.Zero(t, v, "new element %d", i+4)
	}
	require.NoError(t, w.BarrierAll()) // everyone has checked: now write
	require.NoError(t, shmem.P(w, &a[999], me, right), "the new block is symmetric")
	require.NoError(t, w.BarrierAll())
	require.Equal(t, l, a[999])

	a, err = shmem.Realloc(w, a, 2)
	require.NoError(t, err)
	require.Equal(t, []int64{l, l + 1}, a)

	_, err = shmem.Realloc(w, a, w.HeapSize())
	require.ErrorIs(t, err, shmem.ErrNoMemory)
	var ae *shmem.AllocError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, []int64{l, l + 1}, a, "a failed realloc keeps the old block")
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Put(w, a, []int64{7, 8}, right), "and it stays usable")
	require.NoError(t, w.BarrierAll())

	a, err = shmem.Realloc(w, a, 0)
	require.NoError(t, err)
	require.Nil(t, a)
	c, err := shmem.Realloc[int64](w, nil, 3)
	require.NoError(t, err)
	require.Len(t, c, 3)
	require.NoError(t, shmem.Free(w, c))
	require.NoError(t, shmem.Free(w, b))
}

func caseMallocHints(t *T, w *shmem.World) {
	for _, h := range []uint{0, shmem.MallocAtomicsRemote, shmem.MallocSignalRemote, shmem.MallocAtomicsRemote | shmem.MallocSignalRemote} {
		s, err := shmem.MallocWithHints[uint64](w, 8, h)
		require.NoError(t, err, "hints %#x", h)
		require.Len(t, s, 8)
		require.NoError(t, shmem.AtomicAdd(w, &s[0], 1, (w.MyPE()+1)%w.NPEs()))
		require.NoError(t, w.BarrierAll())
		require.Equal(t, uint64(1), s[0])
		require.NoError(t, shmem.Free(w, s))
	}
	// Hints are advice: bits nobody knows are ignored, not refused.
	s, err := shmem.MallocWithHints[uint64](w, 8, ^shmem.MallocAtomicsRemote)
	require.NoError(t, err, "unknown hint bits")
	require.Len(t, s, 8)
	require.NoError(t, shmem.Free(w, s))
}

// OpenSHMEM 1.6 says it of the whole malloc family: the routines are
// called by every PE of the world team, and the barrier each one holds
// quiets the default context, so what a PE put on it before the call is
// complete at its target once the call returns there. Each PE puts a
// block without blocking into its right neighbour's array, then
// allocates (Malloc, Calloc, Align) or frees, and reads what its left
// neighbour put straight after, without any other synchronisation.
func caseMallocQuiets(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const n = 16 << 10
	buf, err := shmem.Malloc[int64](w, n)
	require.NoError(t, err)
	src := make([]int64, n)
	check := func(what string, round int64) {
		for i, v := range buf {
			if v != int64(left)*1000+round {
				t.Fatalf("%s: element %d from PE %d holds %d after the call returned, want %d", what, i, left, v, int64(left)*1000+round)
			}
		}
	}
	put := func(round int64) {
		for i := range src {
			src[i] = int64(w.MyPE())*1000 + round
		}
		require.NoError(t, shmem.PutNBI(w, buf, src, right))
	}
	put(1)
	a, err := shmem.Malloc[int64](w, 8)
	require.NoError(t, err)
	check("malloc", 1)
	require.NoError(t, w.BarrierAll())
	put(2)
	b, err := shmem.Calloc[int32](w, 8)
	require.NoError(t, err)
	check("calloc", 2)
	require.NoError(t, w.BarrierAll())
	put(3)
	c, err := shmem.Align[int64](w, 4096, 8)
	require.NoError(t, err)
	check("align", 3)
	require.NoError(t, w.BarrierAll())
	put(4)
	require.NoError(t, shmem.Free(w, a))
	check("free", 4)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, b))
	require.NoError(t, shmem.Free(w, c))
	require.NoError(t, shmem.Free(w, buf))
}
