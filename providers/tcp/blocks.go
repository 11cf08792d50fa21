package tcp

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Blocked moves (core.BlockMover, CapBlocks: OpenSHMEM's iput, iget, ibput
// and ibget). A blocked put is one opPutBlocks frame: the issuer gathers
// the blocks into the send queue, packed, and the target's reader
// scatters them into its region as it reads them. A blocked get is one
// opGetBlocks request, which the target answers with one reply of the
// blocks gathered from its region; the issuer's reader scatters the
// reply into place. Either is one operation on the counter, acknowledged
// (a put) or answered (a get) once. A move of more than maxBlocksFrame
// bytes of blocks is a frame per maxBlocksFrame bytes' worth of whole
// blocks; blocks larger than half of that move one put or get each,
// which carry them from where they lie.

var _ core.BlockMover = (*endpoint)(nil)

// blocksPer is how many blocks of size bytes one frame carries, at
// least 2 (fewer, and the blocks move one operation each).
func blocksPer(size int) int { return maxBlocksFrame / size }

// PutBlocks implements core.BlockMover.
func (e *endpoint) PutBlocks(pe int, r core.Region, off int, src []byte, b core.Blocks) error {
	const op = "put-blocks"
	reg, c, err := e.blocks(op, pe, r, off, len(src), b)
	if err != nil || b.Empty() {
		return err
	}
	if c == nil {
		mem.ScatterBlocks(reg.mem[off:], src, b)
		e.d.notify(reg.idx, uint64(off), uint64(b.RemoteSpan()))
		e.local()
		return nil
	}
	per := blocksPer(b.Size)
	if per < 2 {
		return core.EachBlock(e, pe, r, off, src, b, false)
	}
	for i := 0; i < b.N; i += per {
		part := b
		part.N = min(per, b.N-i)
		o, s := off+i*b.RemoteStride, src[i*b.LocalStride:]
		if part.N == 1 {
			// The last block alone: a put (or a value) of its own.
			if err := core.PutBlocks(e, pe, r, o, s, part); err != nil {
				return err
			}
			continue
		}
		h := header{op: opPutBlocks, typ: byte(b.Elem), region: reg.idx, off: uint64(o), arg: uint64(part.N * b.Size),
			bsize: uint64(b.Size), str: uint64(b.RemoteStride)}
		if err := c.sendBlocks(e, &h, s, b.LocalStride); err != nil {
			return e.Err(op, pe, err)
		}
	}
	return nil
}

// GetBlocks implements core.BlockMover: one request, whose reply the
// reader scatters into dst.
func (e *endpoint) GetBlocks(pe int, r core.Region, off int, dst []byte, b core.Blocks) error {
	const op = "get-blocks"
	reg, c, err := e.blocks(op, pe, r, off, len(dst), b)
	if err != nil || b.Empty() {
		return err
	}
	if c == nil {
		mem.GatherBlocks(dst, reg.mem[off:], b)
		e.local()
		return nil
	}
	per := blocksPer(b.Size)
	if per < 2 {
		return core.EachBlock(e, pe, r, off, dst, b, true)
	}
	for i := 0; i < b.N; i += per {
		part := b
		part.N = min(per, b.N-i)
		o, d := off+i*b.RemoteStride, dst[i*b.LocalStride:]
		if part.N == 1 {
			// The last block alone: a get (or a value) of its own.
			if err := core.GetBlocks(e, pe, r, o, d, part); err != nil {
				return err
			}
			continue
		}
		req, err := c.newRequest(d, nil, false)
		if err != nil {
			return e.Err(op, pe, err)
		}
		req.nblk, req.bsize, req.stride = part.N, b.Size, b.LocalStride
		h := header{op: opGetBlocks, typ: byte(b.Elem), region: reg.idx, off: uint64(o), arg: uint64(part.N * b.Size),
			bsize: uint64(b.Size), str: uint64(b.RemoteStride)}
		if _, err := e.await1(op, c, &h, req); err != nil {
			return err
		}
	}
	return nil
}

// blocks validates a blocked move like rma: its shape against a local
// buffer of local bytes, its span at off in pe's part of r.
func (e *endpoint) blocks(op string, pe int, r core.Region, off, local int, b core.Blocks) (*region, *conn, error) {
	if err := b.Check(local); err != nil {
		return nil, nil, e.Err(op, pe, err)
	}
	return e.rma(op, pe, r, off, b.RemoteSpan())
}
