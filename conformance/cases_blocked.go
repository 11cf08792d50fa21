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
		{Name: "Core/Blocks", Needs: core.CapRMA, Core: caseBlocksCore},
		{Name: "RMA/BlockedWrappedContexts", Needs: rmaCaps, Shmem: caseBlockedWrappedContexts},
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

// blockShapes are blocked moves, in bytes, that a wrong scatter, a wrong
// stride or a block count off by one shows: strides that are no multiple
// of the block, blocks that are single values (an iput), blocks of
// 16-byte elements, blocks contiguous at one end only, and many blocks
// (more than one tcp frame carries).
var blockShapes = []core.Blocks{
	{N: 5, Size: 24, RemoteStride: 40, LocalStride: 32, Elem: 8},
	{N: 7, Size: 4, RemoteStride: 12, LocalStride: 4, Elem: 4},
	{N: 3, Size: 1, RemoteStride: 3, LocalStride: 5, Elem: 1},
	{N: 4, Size: 32, RemoteStride: 48, LocalStride: 32, Elem: 16},
	{N: 2, Size: 16, RemoteStride: 16, LocalStride: 40, Elem: 8},
	{N: 9000, Size: 40, RemoteStride: 56, LocalStride: 48, Elem: 8},
}

// caseBlocksCore drives the blocked moves through core (core.PutBlocks
// and core.GetBlocks, which use a provider's core.BlockMover where it is
// one) and, where the endpoint is a BlockMover, through its own methods,
// contiguous shapes included: every PE puts blocks into its right
// neighbour's region, over a region and a buffer filled with a marker,
// and reads them back. Every byte is checked: each block where its
// stride puts it, and the marker between the blocks and past the last
// one untouched, at both ends.
func caseBlocksCore(t *T, j CoreJob) {
	d := j.Domain
	me, n := d.Rank(), d.Size()
	right, left := (me+1)%n, (me+n-1)%n
	const base, marker = 64, 0xEE
	size := base
	for _, b := range blockShapes {
		size = max(size, base+b.RemoteSpan()+64)
	}
	r, err := d.NewRegion(size)
	require.NoError(t, err)
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, ep.Close()) }()
	bm, isMover := ep.(core.BlockMover)
	type mover struct {
		name     string
		put, get func(off int, local []byte, b core.Blocks) error
	}
	movers := []mover{{
		name: "core",
		put:  func(off int, l []byte, b core.Blocks) error { return core.PutBlocks(ep, right, r, off, l, b) },
		get:  func(off int, l []byte, b core.Blocks) error { return core.GetBlocks(ep, right, r, off, l, b) },
	}}
	if isMover {
		movers = append(movers, mover{
			name: "BlockMover",
			put:  func(off int, l []byte, b core.Blocks) error { return bm.PutBlocks(right, r, off, l, b) },
			get:  func(off int, l []byte, b core.Blocks) error { return bm.GetBlocks(right, r, off, l, b) },
		})
	}
	shapes := append(blockShapes[:len(blockShapes):len(blockShapes)],
		core.Blocks{N: 6, Size: 16, RemoteStride: 16, LocalStride: 16, Elem: 8}, // contiguous on both sides
		core.Blocks{N: 1, Size: 8, RemoteStride: 8, LocalStride: 8, Elem: 8})    // one value
	pattern := func(pe, k, i int) byte { return byte(1 + (pe*31+k*7+i)%200) }
	for _, m := range movers {
		for k, b := range shapes {
			mine := r.Local()
			for i := range mine {
				mine[i] = marker
			}
			require.NoError(t, j.Boot.Barrier())
			src := make([]byte, b.LocalSpan()+16)
			for i := range src {
				src[i] = pattern(me, k, i)
			}
			require.NoError(t, m.put(base, src, b), "%s: put of %+v", m.name, b)
			require.NoError(t, ep.Quiet())
			require.NoError(t, j.Boot.Barrier())
			// What the left neighbour put here.
			want := make([]byte, size)
			for i := range want {
				want[i] = marker
			}
			for i := range b.N {
				for x := range b.Size {
					want[base+i*b.RemoteStride+x] = pattern(left, k, i*b.LocalStride+x)
				}
			}
			if !bytesEqual(want, mine) {
				at := firstDiff(want, mine)
				require.Failf(t, "blocks misplaced", "%s: put of %+v: byte %d is %#x, want %#x", m.name, b, at, mine[at], want[at])
			}
			// Read the right neighbour's (what this PE put) back.
			dst := make([]byte, b.LocalSpan()+16)
			for i := range dst {
				dst[i] = marker
			}
			require.NoError(t, m.get(base, dst, b), "%s: get of %+v", m.name, b)
			wantDst := make([]byte, len(dst))
			for i := range wantDst {
				wantDst[i] = marker
			}
			for i := range b.N {
				for x := range b.Size {
					wantDst[i*b.LocalStride+x] = pattern(me, k, i*b.LocalStride+x)
				}
			}
			if !bytesEqual(wantDst, dst) {
				at := firstDiff(wantDst, dst)
				require.Failf(t, "blocks misplaced", "%s: get of %+v: byte %d is %#x, want %#x", m.name, b, at, dst[at], wantDst[at])
			}
			require.NoError(t, j.Boot.Barrier())
		}
	}
	// A span past the region's end, and a local buffer shorter than the
	// blocks, are refused with nothing moved.
	long := core.Blocks{N: 2, Size: 8, RemoteStride: size, LocalStride: 8, Elem: 8}
	require.ErrorIs(t, core.PutBlocks(ep, right, r, 0, make([]byte, 16), long), core.ErrOutOfBounds)
	short := core.Blocks{N: 3, Size: 8, RemoteStride: 16, LocalStride: 16, Elem: 8}
	require.ErrorIs(t, core.GetBlocks(ep, right, r, 0, make([]byte, 39), short), core.ErrInvalid)
	if isMover {
		require.ErrorIs(t, bm.PutBlocks(right, r, 0, make([]byte, 16), long), core.ErrOutOfBounds)
		require.ErrorIs(t, bm.GetBlocks(right, r, 0, make([]byte, 39), short), core.ErrInvalid)
	}
	require.NoError(t, j.Boot.Barrier())
}

func bytesEqual(a, b []byte) bool { return firstDiff(a, b) < 0 }

// firstDiff is the first index where a and b differ, -1 if nowhere.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// The context wrappers keep the blocked moves: on a team context the
// team's ranks name the target, and a NoStore context refuses a blocked
// put but makes a blocked get (OpenSHMEM 1.6, shmem_ibput and
// shmem_ibget take a context).
func caseBlockedWrappedContexts(t *T, w *shmem.World) {
	n := w.NPEs()
	// The team of every PE in reverse: rank r is PE n-1-r.
	rev, err := w.TeamWorld().SplitStrided(n-1, -1, n, shmem.TeamConfig{})
	require.NoError(t, err)
	defer func() { require.NoError(t, rev.Destroy()) }()
	tc, err := rev.CreateCtx(shmem.ContextOptions{})
	require.NoError(t, err)
	ns, err := w.NewContext(shmem.ContextOptions{NoStore: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, ns.Destroy()) }()
	me := w.MyPE()
	dst, err := shmem.Malloc[int64](w, 64)
	require.NoError(t, err)
	src := make([]int64, 64)
	for i := range src {
		src[i] = int64(me*1000 + i)
	}
	// Team rank 0 is PE n-1: PE 0 puts 4 blocks of 3 there, 8 apart.
	if me == 0 {
		require.NoError(t, shmem.IBPut(tc, dst, src, 8, 4, 3, 4, 0))
		require.NoError(t, tc.Quiet())
	}
	require.NoError(t, w.BarrierAll())
	if me == n-1 {
		for b := range 4 {
			for x := range 3 {
				require.Equal(t, int64(b*4+x), dst[b*8+x], "block %d element %d through the team context", b, x)
			}
			for x := 3; x < 8; x++ {
				require.Zero(t, dst[b*8+x], "between the blocks")
			}
		}
	}
	require.ErrorIs(t, shmem.IBPut(ns, dst, src, 2, 2, 1, 4, (me+1)%n), core.ErrInvalid, "a blocked put on a NoStore context")
	got := make([]int64, 16)
	require.NoError(t, shmem.IBGet(ns, got, dst, 4, 8, 3, 4, n-1))
	for b := range 4 {
		for x := range 3 {
			require.Equal(t, int64(b*4+x), got[b*4+x], "block %d element %d through the NoStore context", b, x)
		}
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, tc.Destroy())
}
