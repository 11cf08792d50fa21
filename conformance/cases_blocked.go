package conformance

import (
	"math"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func blockedCases() []Case {
	return []Case{
		{Name: "RMA/Blocked", Needs: rmaCaps, Shmem: caseBlocked},
		{Name: "RMA/BlockedBadInput", Needs: rmaCaps, Shmem: caseBlockedBadInput},
	}
}

// OpenSHMEM 1.6, shmem_ibput and shmem_ibget: nblocks blocks of bsize
// contiguous elements, the blocks dst elements apart in dest and sst
// apart in source, strides at least 1 and scaled by the element size.
// Every PE puts blocks into its right neighbour's array and gets them
// back, and what lies between the blocks stays untouched; on the default
// context and on a context of its own, with elements of 1, 4 and 16 bytes,
// and with strides equal to the block size (contiguous on both sides).
func caseBlocked(t *T, w *shmem.World) {
	ctx, err := w.NewContext(shmem.ContextOptions{})
	require.NoError(t, err)
	for _, c := range []shmem.Ctx{w, ctx} {
		blocked(t, w, c, 3, 4, 5, 4, func(pe, i int) int32 { return int32(pe*1000 + i) })
		blocked(t, w, c, 2, 5, 2, 3, func(pe, i int) uint8 { return uint8(pe*16 + i) })
		blocked(t, w, c, 4, 3, 4, 4, func(pe, i int) complex128 { return complex(float64(pe), float64(i)) })
		blocked(t, w, c, 1, 6, 3, 2, func(pe, i int) float64 { return float64(pe) + float64(i)/8 })
	}
	require.NoError(t, ctx.Destroy())
}

func blocked[E shmem.Elem](t *T, w *shmem.World, c shmem.Ctx, bsize, nblocks, dst, sst int, mk func(pe, i int) E) {
	left, right := neighbours(w)
	me := w.MyPE()
	dspan, sspan := (nblocks-1)*dst+bsize, (nblocks-1)*sst+bsize
	buf, err := shmem.Malloc[E](w, dspan+1)
	require.NoError(t, err)
	var zero E
	src := make([]E, sspan)
	for i := range src {
		src[i] = mk(me, i)
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.IBPut(c, buf, src, dst, sst, bsize, nblocks, right))
	require.NoError(t, w.Quiet())
	if cx, ok := c.(*shmem.Context); ok {
		require.NoError(t, cx.Quiet())
	}
	require.NoError(t, w.BarrierAll())
	in := map[int]bool{}
	for b := range nblocks {
		for j := range bsize {
			in[b*dst+j] = true
			require.Equal(t, mk(left, b*sst+j), buf[b*dst+j], "ibput: block %d element %d", b, j)
		}
	}
	for i := range buf {
		if !in[i] {
			require.Equal(t, zero, buf[i], "ibput wrote element %d, between the blocks", i)
		}
	}
	// Back again, with the strides the other way round.
	got := make([]E, sspan)
	require.NoError(t, shmem.IBGet(c, got, buf, sst, dst, bsize, nblocks, right))
	for b := range nblocks {
		for j := range bsize {
			require.Equal(t, mk(me, b*sst+j), got[b*sst+j], "ibget: block %d element %d", b, j)
		}
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, buf))
}

func caseBlockedBadInput(t *T, w *shmem.World) {
	_, right := neighbours(w)
	buf, err := shmem.Malloc[int64](w, 16)
	require.NoError(t, err)
	src := make([]int64, 16)
	for _, bad := range []struct {
		what               string
		dst, sst, bs, nblk int
	}{
		{"zero destination stride", 0, 1, 1, 2},
		{"negative source stride", 1, -1, 1, 2},
		{"negative block size", 1, 1, -1, 2},
		{"negative block count", 1, 1, 1, -2},
		{"destination too short", 8, 1, 2, 3},
		{"source too short", 1, 9, 1, 3},
		{"a span past the largest int", math.MaxInt / 2, 1, 1, 3},
	} {
		err := shmem.IBPut(w, buf, src, bad.dst, bad.sst, bad.bs, bad.nblk, right)
		require.ErrorIs(t, err, core.ErrInvalid, "ibput: %s", bad.what)
		require.ErrorContains(t, err, "ibput")
		err = shmem.IBGet(w, src, buf, bad.sst, bad.dst, bad.bs, bad.nblk, right)
		require.ErrorIs(t, err, core.ErrInvalid, "ibget: %s", bad.what)
		require.ErrorContains(t, err, "ibget")
	}
	require.ErrorIs(t, shmem.IBPut(w, make([]int64, 4), src, 2, 1, 1, 2, right), core.ErrOutOfBounds, "dest not symmetric")
	require.ErrorIs(t, shmem.IBGet(w, src, make([]int64, 4), 1, 2, 1, 2, right), core.ErrOutOfBounds, "source not symmetric")
	require.NoError(t, shmem.IBPut(w, buf, src, 1, 1, 0, 5, right), "no elements is no error")
	require.NoError(t, shmem.IBGet(w, src, buf, 1, 1, 3, 0, right), "no blocks is no error")
	require.NoError(t, w.BarrierAll())
	require.Equal(t, make([]int64, 16), buf, "a failed ibput wrote")
	require.NoError(t, shmem.Free(w, buf))
}
