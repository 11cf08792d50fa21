package tcp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// framesQueued is how many frames c has queued since it was made: its
// issuers' operations and requests, and its reader's answers.
func framesQueued(c *conn) uint64 {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	return c.q.enq
}

// TestBlocksOneFrame shows that a blocked put and a blocked get each
// cross the connection as one frame, and the reply as one, with every
// block where its strides put it: 64 blocks of 24 bytes (three 8-byte
// elements) at a stride of 40 bytes at the target and 32 in the local
// buffer, and single 4-byte elements (an iput), which are stored as
// values.
func TestBlocksOneFrame(t *testing.T) {
	doms, _ := openJob(t, 2, nil)
	regs := newRegions(t, doms, 1<<16)
	ep := newEndpoint(t, doms[0])
	c0, c1 := doms[0].conns[1], doms[1].conns[0]

	for _, b := range []core.Blocks{
		{N: 64, Size: 24, RemoteStride: 40, LocalStride: 32, Elem: 8},
		{N: 100, Size: 4, RemoteStride: 12, LocalStride: 8, Elem: 4},
	} {
		src := make([]byte, b.LocalSpan())
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		clear(regs[1].mem)
		f0 := framesQueued(c0)
		require.NoError(t, core.PutBlocks(ep, 1, regs[0], 64, src, b))
		require.Equal(t, uint64(1), framesQueued(c0)-f0, "a blocked put is one frame")
		require.NoError(t, ep.Quiet())
		want := make([]byte, len(regs[1].mem))
		for i := range b.N {
			copy(want[64+i*b.RemoteStride:], src[i*b.LocalStride:][:b.Size])
		}
		require.Equal(t, want, regs[1].mem, "every block where the strides put it, nothing else")

		// The ack of the put is queued by now: count the reply alone.
		f0, f1 := framesQueued(c0), framesQueued(c1)
		dst := make([]byte, b.LocalSpan())
		require.NoError(t, core.GetBlocks(ep, 1, regs[0], 64, dst, b))
		require.Equal(t, uint64(1), framesQueued(c0)-f0, "a blocked get is one request")
		require.Equal(t, uint64(1), framesQueued(c1)-f1, "and one reply")
		wantDst := make([]byte, len(dst))
		for i := range b.N {
			copy(wantDst[i*b.LocalStride:][:b.Size], src[i*b.LocalStride:][:b.Size])
		}
		require.Equal(t, wantDst, dst, "the gaps of the local buffer untouched")
	}
	require.Equal(t, ep.counter.Issued(), ep.counter.CompletedUpTo())
}

// TestBlocksLarge moves more blocks than one frame carries: several
// frames, every block in place; and blocks larger than half a frame,
// which go one put or get each.
func TestBlocksLarge(t *testing.T) {
	doms, _ := openJob(t, 2, nil)
	regs := newRegions(t, doms, 4<<20)
	ep := newEndpoint(t, doms[0])
	for _, b := range []core.Blocks{
		{N: 3000, Size: 200, RemoteStride: 256, LocalStride: 208, Elem: 8},
		{N: 3, Size: maxBlocksFrame/2 + 8, RemoteStride: maxBlocksFrame, LocalStride: maxBlocksFrame/2 + 16, Elem: 8},
	} {
		src := make([]byte, b.LocalSpan())
		for i := range src {
			src[i] = byte(i*13 + 5)
		}
		clear(regs[1].mem)
		require.NoError(t, core.PutBlocks(ep, 1, regs[0], 0, src, b))
		require.NoError(t, ep.Quiet())
		dst := make([]byte, len(src))
		require.NoError(t, core.GetBlocks(ep, 1, regs[0], 0, dst, b))
		for i := range b.N {
			s := src[i*b.LocalStride:][:b.Size]
			require.Equal(t, s, regs[1].mem[i*b.RemoteStride:][:b.Size], "block %d at the target", i)
			require.Equal(t, s, dst[i*b.LocalStride:][:b.Size], "block %d back", i)
		}
	}
}

// TestBlocksRefused: a move whose span leaves the region is refused by
// the issuer before anything is sent.
func TestBlocksRefused(t *testing.T) {
	doms, _ := openJob(t, 2, nil)
	regs := newRegions(t, doms, 1<<12)
	ep := newEndpoint(t, doms[0])
	b := core.Blocks{N: 2, Size: 8, RemoteStride: 1 << 12, LocalStride: 8, Elem: 8}
	err := ep.PutBlocks(1, regs[0], 0, make([]byte, 16), b)
	require.ErrorIs(t, err, core.ErrOutOfBounds)
	err = ep.GetBlocks(1, regs[0], 0, make([]byte, 8), core.Blocks{N: 2, Size: 8, RemoteStride: 8, LocalStride: 8, Elem: 8})
	require.ErrorIs(t, err, core.ErrInvalid, "a local buffer shorter than the blocks")
}

// blocksFrames are well-formed blocked moves for the fuzz target's
// region: a put of three 8-byte blocks 16 apart, a put of four single
// 2-byte elements, a get of two blocks (answered by the target).
func blocksFrames() [][]byte {
	return [][]byte{
		frame(header{op: opPutBlocks, typ: 8, region: 0, off: 0, arg: 24, bsize: 8, str: 16}, bytes.Repeat([]byte{3}, 24)),
		frame(header{op: opPutBlocks, typ: 2, region: 0, off: 100, arg: 8, bsize: 2, str: 6}, []byte{1, 2, 3, 4, 5, 6, 7, 8}),
		frame(header{op: opGetBlocks, typ: 4, region: 0, off: 0, arg: 16, bsize: 8, str: 16, id: 11}, nil),
	}
}

// FuzzBlocksFrames feeds the blocked moves' frames, valid and mangled,
// to a connection's progress, as FuzzFrames does every frame: no panic,
// nothing written outside the region, and the stream either applied or
// the connection dropped.
func FuzzBlocksFrames(f *testing.F) {
	all := blocksFrames()
	f.Add(bytes.Join(all, nil))
	for _, fr := range all {
		f.Add(fr)
	}
	f.Add(frame(header{op: opPutBlocks, typ: 8, region: 0, off: fuzzRegion - 16, arg: 16, bsize: 8, str: 16}, make([]byte, 16)))
	f.Add(frame(header{op: opPutBlocks, typ: 1, region: 0, off: 0, arg: 2, bsize: 1, str: 1 << 62}, make([]byte, 2)))
	f.Add(frame(header{op: opGetBlocks, typ: 8, region: 1, off: 0, arg: 16, bsize: 8, str: 8, id: 1}, nil))
	f.Fuzz(fuzzStream)
}

// TestBlocksFramesApplied checks that the fuzz seed does what it says,
// and that malformed blocked moves are refused by the decoder.
func TestBlocksFramesApplied(t *testing.T) {
	ft := newFuzzTarget(t, bytes.Join(blocksFrames(), nil))
	c := ft.c
	c.read()
	m := ft.backing[fuzzGuard:]
	require.Equal(t, []byte{3, 3, 3, 3, 3, 3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 3}, m[:17])
	require.Equal(t, []byte{3, 3, 3, 3, 3, 3, 3, 3}, m[32:40])
	require.Zero(t, m[40])
	require.Equal(t, []byte{1, 2, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0, 0, 0, 7, 8, 0}, m[100:121])
	require.Equal(t, uint64(2), c.rd.rx.applied, "two puts, one operation each")
	// The get's reply: the two blocks, packed.
	b := c.q.out
	h, err := decodeHeader(b)
	require.NoError(t, err)
	require.Equal(t, opReply, h.op)
	require.Equal(t, uint64(16), h.arg)
	require.Equal(t, bytes.Repeat([]byte{3}, 16), b[hdrLen:hdrLen+16])

	for name, h := range map[string]header{
		"one block":           {op: opPutBlocks, typ: 8, arg: 8, bsize: 8, str: 8},
		"a partial block":     {op: opPutBlocks, typ: 8, arg: 20, bsize: 8, str: 8},
		"a block of no bytes": {op: opPutBlocks, typ: 8, arg: 16},
		"a partial element":   {op: opPutBlocks, typ: 8, arg: 24, bsize: 12, str: 16},
		"a stride under one":  {op: opGetBlocks, typ: 8, arg: 16, bsize: 8, str: 4, id: 1},
		"an element of 3":     {op: opPutBlocks, typ: 3, arg: 6, bsize: 3, str: 3},
		"an atomic operation": {op: opPutBlocks, typ: 8, aop: 1, arg: 16, bsize: 8, str: 8},
		"more than one frame": {op: opGetBlocks, typ: 8, arg: maxBlocksFrame + 8, bsize: 8, str: 8, id: 1},
		"a compare operand":   {op: opGetBlocks, typ: 8, arg: 16, bsize: 8, str: 8, id: 1, cmp: 1},
	} {
		enc := appendHeader(nil, &h)
		dh, err := decodeHeader(enc[:hdrLen])
		if err == nil {
			err = decodeExt(&dh, enc[hdrLen:])
		}
		require.ErrorIs(t, err, errFrame, name)
	}
	// The extension's fields are where the encoder put them.
	enc := appendHeader(nil, &header{op: opGetBlocks, typ: 8, arg: 16, bsize: 8, str: 24, id: 5})
	require.Len(t, enc, hdrLen+reqExtLen+blkExtLen)
	require.Equal(t, uint64(24), binary.LittleEndian.Uint64(enc[hdrLen+reqExtLen+8:]))
}

// BenchmarkBlocks is an ibput and an ibget of 64 blocks of 64 bytes
// between two in-process PEs: one frame each way (blocks=one), against
// one put or get per block (blocks=each, what shmem did without
// core.BlockMover). A put is followed by its quiet.
func BenchmarkBlocks(b *testing.B) {
	doms, _ := openJob(b, 2, nil)
	regs := newRegions(b, doms, 1<<16)
	ep := newEndpoint(b, doms[0])
	blk := core.Blocks{N: 64, Size: 64, RemoteStride: 128, LocalStride: 96, Elem: 8}
	local := make([]byte, blk.LocalSpan())
	for _, get := range []bool{false, true} {
		for _, one := range []bool{true, false} {
			name := map[bool]string{false: "put", true: "get"}[get] + "/blocks=" + map[bool]string{true: "one", false: "each"}[one]
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var err error
					switch {
					case one && get:
						err = ep.GetBlocks(1, regs[0], 0, local, blk)
					case one:
						err = ep.PutBlocks(1, regs[0], 0, local, blk)
					default:
						err = core.EachBlock(ep, 1, regs[0], 0, local, blk, get)
					}
					if err == nil && !get {
						err = ep.Quiet()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
