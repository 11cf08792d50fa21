package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

func alignCases() []Case {
	return []Case{
		{Name: "Memory/AlignAddress", Needs: rmaCaps, Shmem: caseAlignAddress},
		{Name: "Memory/AlignTooLarge", Needs: rmaCaps, Shmem: caseAlignTooLarge},
	}
}

// Align's alignment holds for the address a program sees, not only for
// the offset in the heap: at every power of two from a cache line up to
// the heap size, well past the page (or the huge page) a mapping happens
// to start on. Each block is freed before the next, so that even the
// largest alignments find room, and each is still symmetric: what the
// left neighbour puts into its block lands in ours.
func caseAlignAddress(t *T, w *shmem.World) {
	left, right := neighbours(w)
	me, l := int64(w.MyPE()), int64(left)
	for align := 64; align <= w.HeapSize(); align *= 2 {
		b, err := shmem.Align[int64](w, align, 3)
		require.NoError(t, err, "align %d", align)
		require.Len(t, b, 3)
		addr := mem.Addr(b)
		require.Zero(t, addr%uintptr(align), "Align(%d) returned %#x, %d bytes past a multiple", align, addr, addr%uintptr(align))
		require.NoError(t, shmem.Put(w, b, []int64{me, int64(align), me + 1}, right), "put into the block aligned to %d", align)
		require.NoError(t, w.BarrierAll())
		require.Equal(t, []int64{l, int64(align), l + 1}, b, "the block aligned to %d is symmetric", align)
		require.NoError(t, shmem.Free(w, b))
	}
}

// An alignment no block of the heap can have fails on every PE alike, as
// exhaustion does, instead of succeeding on the PEs whose mapping happens
// to sit at a luckier address.
func caseAlignTooLarge(t *T, w *shmem.World) {
	for _, align := range []int{4 * w.HeapSize(), 1 << 40} {
		b, err := shmem.Align[int64](w, align, 1)
		require.ErrorIs(t, err, shmem.ErrNoMemory, "align %d", align)
		require.Nil(t, b)
	}
	b, err := shmem.Align[int64](w, 4096, 1)
	require.NoError(t, err, "the heap still serves")
	require.NoError(t, shmem.Free(w, b))
}
