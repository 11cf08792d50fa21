package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func rmaCases() []Case {
	return []Case{
		{Name: "RMA/Strided", Needs: rmaCaps, Shmem: caseStrided},
		{Name: "RMA/StridedBadInput", Needs: rmaCaps, Shmem: caseStridedBadInput},
		{Name: "Atomic/FetchNBI", Needs: rmaCaps | core.CapFetchAtomic | core.CapCompareSwap, Shmem: caseFetchNBI},
		{Name: "Atomic/FloatNBI", Needs: rmaCaps | core.CapFetchAtomic | core.CapAtomicFloat, Shmem: caseFloatNBI},
	}
}

// strided puts every third element of a local array into every second
// slot of the right neighbour's, gets it back with the strides swapped,
// and checks that the slots in between are untouched.
func strided[E shmem.Elem](t *T, w *shmem.World, mk func(pe, i int) E) {
	left, right := neighbours(w)
	me := w.MyPE()
	const n = 7
	sym, err := shmem.Malloc[E](w, 2*n)
	require.NoError(t, err)
	src := make([]E, 3*n)
	for i := range src {
		src[i] = mk(me, i)
	}
	require.NoError(t, shmem.IPut(w, sym, src, 2, 3, n, right))
	require.NoError(t, w.BarrierAll())
	for i := range n {
		require.Equal(t, mk(left, 3*i), sym[2*i], "iput element %d of %T", i, sym[0])
		require.Zero(t, sym[2*i+1], "iput wrote between the strides at %d", 2*i+1)
	}
	back := make([]E, 4*n)
	require.NoError(t, shmem.IGet(w, back, sym, 4, 2, n, right))
	for i := range back {
		if i%4 == 0 {
			require.Equal(t, mk(me, 3*(i/4)), back[i], "iget element %d of %T", i/4, back[0])
		} else {
			require.Zero(t, back[i], "iget wrote between the strides at %d", i)
		}
	}
	// Unit strides take the contiguous path.
	require.NoError(t, shmem.IGet(w, back[:n], sym, 1, 1, n, right))
	for i := range n {
		want := mk(me, 3*(i/2))
		if i%2 == 1 {
			want = 0
		}
		require.Equal(t, want, back[i], "contiguous iget element %d of %T", i, back[0])
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, sym))
}

func caseStrided(t *T, w *shmem.World) {
	strided(t, w, func(pe, i int) int8 { return int8(pe*16 + i + 1) })
	strided(t, w, func(pe, i int) int16 { return int16(pe*1000 + i + 1) })
	strided(t, w, func(pe, i int) uint32 { return uint32(pe<<20 + i + 1) })
	strided(t, w, func(pe, i int) int64 { return int64(pe)<<40 + int64(i) + 1 })
	strided(t, w, func(pe, i int) float32 { return float32(pe) + float32(i+1)/8 })
	strided(t, w, func(pe, i int) float64 { return float64(pe)*1e9 + float64(i+1) })
	strided(t, w, func(pe, i int) complex128 { return complex(float64(pe), float64(i+1)) })
}

func caseStridedBadInput(t *T, w *shmem.World) {
	_, right := neighbours(w)
	sym, err := shmem.Malloc[int64](w, 8)
	require.NoError(t, err)
	src := make([]int64, 8)
	require.ErrorIs(t, shmem.IPut(w, sym, src, 0, 1, 2, right), shmem.ErrInvalid, "zero stride")
	require.ErrorIs(t, shmem.IPut(w, sym, src, 1, -1, 2, right), shmem.ErrInvalid, "negative stride")
	require.ErrorIs(t, shmem.IPut(w, sym, src, 3, 1, 4, right), shmem.ErrInvalid, "4 elements at stride 3 need 10 slots")
	require.ErrorIs(t, shmem.IGet(w, src, sym, 1, 3, 4, right), shmem.ErrInvalid, "reads past the symmetric array")
	require.ErrorIs(t, shmem.IPut(w, sym, src, 1, 1, -1, right), shmem.ErrInvalid, "negative count")
	require.ErrorIs(t, shmem.IPut(w, src, src, 2, 2, 2, right), shmem.ErrOutOfBounds, "not symmetric")
	require.NoError(t, shmem.IPut(w, sym, src, 1, 1, 0, right), "zero elements are a no-op")
	require.NoError(t, shmem.IGet[int64](w, nil, nil, 5, 5, 0, right))
	require.NoError(t, w.BarrierAll())
	require.Equal(t, make([]int64, 8), sym, "a failed iput wrote")
	require.NoError(t, shmem.Free(w, sym))
}

// fetchNBI runs every non-blocking fetching AMO on the right neighbour's
// variable; the fetched values are there after Quiet.
func fetchNBI[V shmem.AMOInt](t *T, w *shmem.World) {
	_, right := neighbours(w)
	x, err := shmem.Malloc[V](w, 1)
	require.NoError(t, err)
	target := &x[0]
	require.NoError(t, shmem.AtomicSet(w, target, V(0x5a), right))
	require.NoError(t, w.BarrierAll())
	got := make([]V, 9)
	require.NoError(t, shmem.AtomicFetchNBI(w, &got[0], target, right))
	require.NoError(t, shmem.AtomicFetchAddNBI(w, &got[1], target, 5, right))
	require.NoError(t, shmem.AtomicFetchIncNBI(w, &got[2], target, right))
	require.NoError(t, shmem.AtomicSwapNBI(w, &got[3], target, 0x3c, right))
	require.NoError(t, shmem.AtomicCompareSwapNBI(w, &got[4], target, 0x3c, 0xff, right))
	require.NoError(t, shmem.AtomicFetchAndNBI(w, &got[5], target, 0x0f, right))
	require.NoError(t, shmem.AtomicFetchOrNBI(w, &got[6], target, 0x30, right))
	require.NoError(t, shmem.AtomicFetchXorNBI(w, &got[7], target, 0x11, right))
	require.NoError(t, shmem.AtomicFetchNBI(w, &got[8], target, right))
	require.NoError(t, w.Quiet())
	require.Equal(t, []V{0x5a, 0x5a, 0x5f, 0x60, 0x3c, 0xff, 0x0f, 0x3f, 0x2e}, got, "%T", got[0])
	require.ErrorIs(t, shmem.AtomicFetchNBI(w, nil, target, right), shmem.ErrInvalid, "nil fetch")
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, x))
}

func caseFetchNBI(t *T, w *shmem.World) {
	fetchNBI[int32](t, w)
	fetchNBI[uint32](t, w)
	fetchNBI[int64](t, w)
	fetchNBI[uint64](t, w)
	fetchNBI[int](t, w)
	fetchNBI[uintptr](t, w)
}

func floatNBI[V float32 | float64](t *T, w *shmem.World) {
	_, right := neighbours(w)
	x, err := shmem.Malloc[V](w, 1)
	require.NoError(t, err)
	require.NoError(t, shmem.AtomicSet(w, &x[0], V(1.5), right))
	require.NoError(t, w.BarrierAll())
	var a, b V
	require.NoError(t, shmem.AtomicSwapNBI(w, &a, &x[0], -2.25, right))
	require.NoError(t, shmem.AtomicFetchNBI(w, &b, &x[0], right))
	require.NoError(t, w.Quiet())
	require.Equal(t, [2]V{1.5, -2.25}, [2]V{a, b})
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, x))
}

func caseFloatNBI(t *T, w *shmem.World) {
	floatNBI[float32](t, w)
	floatNBI[float64](t, w)
}
