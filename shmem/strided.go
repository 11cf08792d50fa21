package shmem

import (
	"fmt"
	"math"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The strided (iput, iget) and blocked (ibput, ibget) moves are one move
// of blocks: a strided move's blocks are single elements. They work on
// bytes, elements of a size the caller gives, so one body serves every
// element type, the generic Go forms and the C library's alike.

// IPut copies nelems elements of src, taken every srcStride elements, to
// the symmetric dst on PE pe, placed every dstStride elements
// (shmem_iput). Strides count elements and are at least 1. It returns when
// src may be reused; the data is complete at pe after Quiet.
func IPut[T Elem](c Ctx, dst, src []T, dstStride, srcStride, nelems, pe int) error {
	return IPutBytes(c, mem.Bytes(dst), mem.Bytes(src), mem.SizeOf[T](), dstStride, srcStride, nelems, pe)
}

// IGet copies nelems elements of the symmetric src on PE pe, taken every
// srcStride elements, into dst, placed every dstStride elements
// (shmem_iget). It returns when dst holds them.
func IGet[T Elem](c Ctx, dst, src []T, dstStride, srcStride, nelems, pe int) error {
	return IGetBytes(c, mem.Bytes(dst), mem.Bytes(src), mem.SizeOf[T](), dstStride, srcStride, nelems, pe)
}

// IBPut copies nblocks blocks of bsize contiguous elements from src to the
// symmetric dst on PE pe (shmem_ibput, OpenSHMEM 1.6): block i starts at
// element i*srcStride of src and lands at element i*dstStride of dst.
// Strides count elements and are at least 1. It returns when src may be
// reused; the data is complete at pe after Quiet. Blocks that are
// contiguous on both sides move as one put.
func IBPut[T Elem](c Ctx, dst, src []T, dstStride, srcStride, bsize, nblocks, pe int) error {
	return IBPutBytes(c, mem.Bytes(dst), mem.Bytes(src), mem.SizeOf[T](), dstStride, srcStride, bsize, nblocks, pe)
}

// IBGet copies nblocks blocks of bsize contiguous elements of the
// symmetric src on PE pe into dst (shmem_ibget): block i starts at
// element i*srcStride of src and lands at element i*dstStride of dst. It
// returns when dst holds them.
func IBGet[T Elem](c Ctx, dst, src []T, dstStride, srcStride, bsize, nblocks, pe int) error {
	return IBGetBytes(c, mem.Bytes(dst), mem.Bytes(src), mem.SizeOf[T](), dstStride, srcStride, bsize, nblocks, pe)
}

// IPutBytes is IPut of elements of esize bytes (1, 2, 4, 8 or 16) held
// as bytes, for callers that know an element's size but no Go type for
// it (the C library). Counts and strides are in elements.
func IPutBytes(c Ctx, dst, src []byte, esize, dstStride, srcStride, nelems, pe int) error {
	return moveBlocks(c, blockMove{op: "iput", elems: true}, dst, src, esize, dstStride, srcStride, 1, nelems, pe)
}

// IGetBytes is IGet of elements of esize bytes held as bytes (see
// IPutBytes).
func IGetBytes(c Ctx, dst, src []byte, esize, dstStride, srcStride, nelems, pe int) error {
	return moveBlocks(c, blockMove{op: "iget", elems: true, get: true}, src, dst, esize, srcStride, dstStride, 1, nelems, pe)
}

// IBPutBytes is IBPut of elements of esize bytes held as bytes (see
// IPutBytes).
func IBPutBytes(c Ctx, dst, src []byte, esize, dstStride, srcStride, bsize, nblocks, pe int) error {
	return moveBlocks(c, blockMove{op: "ibput"}, dst, src, esize, dstStride, srcStride, bsize, nblocks, pe)
}

// IBGetBytes is IBGet of elements of esize bytes held as bytes (see
// IPutBytes).
func IBGetBytes(c Ctx, dst, src []byte, esize, dstStride, srcStride, bsize, nblocks, pe int) error {
	return moveBlocks(c, blockMove{op: "ibget", get: true}, src, dst, esize, srcStride, dstStride, bsize, nblocks, pe)
}

// blockMove says which move moveBlocks makes: its routine's name, whether
// it gets (else puts), and whether its blocks are single elements (a
// strided move, whose errors count elements, not blocks).
type blockMove struct {
	op    string
	get   bool
	elems bool
}

// what is the move's size as its errors say it.
func (m blockMove) what(bsize, nblocks int) string {
	if m.elems {
		return fmt.Sprintf("%d elements", nblocks)
	}
	return fmt.Sprintf("%d blocks of %d elements", nblocks, bsize)
}

// moveBlocks moves nblocks blocks of bsize elements of esize bytes
// between the symmetric sym on pe and local: block i at element
// i*symStride of sym and i*localStride of local. It is one operation of
// the provider's where the provider has one (core.BlockMover, CapBlocks:
// one frame each way over tcp), else one per block (core.PutBlocks). A
// block of one element of at most 8 bytes moves as one value, so the
// target never sees it half written; blocks contiguous on both sides
// move as one transfer.
func moveBlocks(c Ctx, m blockMove, sym, local []byte, esize, symStride, localStride, bsize, nblocks, pe int) error {
	x, r, off, err := checkBlocks(c, m, sym, local, esize, symStride, localStride, bsize, nblocks)
	if err != nil || x == nil {
		return err
	}
	if nblocks == 1 {
		// A stride of one block's move means nothing (and may be any size).
		symStride, localStride = bsize, bsize
	}
	b := core.Blocks{N: nblocks, Size: bsize * esize, RemoteStride: symStride * esize, LocalStride: localStride * esize, Elem: esize}
	if m.get {
		return core.GetBlocks(x.ep, pe, r, off, local, b)
	}
	return core.PutBlocks(x.ep, pe, r, off, local, b)
}

// checkBlocks validates a move of nblocks blocks of bsize elements of
// esize bytes between the symmetric sym and local, and returns the
// context and sym's region and offset; a nil context where there is
// nothing to move.
func checkBlocks(c Ctx, m blockMove, sym, local []byte, esize, symStride, localStride, bsize, nblocks int) (*Context, core.Region, int, error) {
	op := m.op
	if err := checkElemSize(op, esize); err != nil {
		return nil, nil, 0, err
	}
	if bsize < 0 || nblocks < 0 {
		return nil, nil, 0, fmt.Errorf("shmem: %s of %s: the counts must not be negative: %w", op, m.what(bsize, nblocks), core.ErrInvalid)
	}
	if symStride < 1 || localStride < 1 {
		return nil, nil, 0, fmt.Errorf("shmem: %s: strides %d and %d: strides count elements and must be at least 1: %w",
			op, symStride, localStride, core.ErrInvalid)
	}
	if bsize == 0 || nblocks == 0 {
		return nil, nil, 0, nil
	}
	symSpan, localSpan := blockedSpan(nblocks, symStride, bsize), blockedSpan(nblocks, localStride, bsize)
	if symSpan < 0 || localSpan < 0 || symSpan > math.MaxInt/esize || localSpan > math.MaxInt/esize {
		if m.elems {
			stride := symStride
			if symSpan >= 0 && symSpan <= math.MaxInt/esize {
				stride = localStride
			}
			return nil, nil, 0, fmt.Errorf("shmem: %s of %s at a stride of %d overflows: the span is more than %d bytes: %w",
				op, m.what(bsize, nblocks), stride, math.MaxInt, core.ErrInvalid)
		}
		return nil, nil, 0, fmt.Errorf("shmem: %s of %s at strides %d and %d overflows: a span is more than %d bytes: %w",
			op, m.what(bsize, nblocks), symStride, localStride, math.MaxInt, core.ErrInvalid)
	}
	if len(sym) < symSpan*esize || len(local) < localSpan*esize {
		return nil, nil, 0, fmt.Errorf("shmem: %s of %s at strides %d (symmetric) and %d (local) needs %d and %d elements; the buffers hold %d and %d: %w",
			op, m.what(bsize, nblocks), symStride, localStride, symSpan, localSpan, len(sym)/esize, len(local)/esize, core.ErrInvalid)
	}
	x := c.context()
	r, off, err := x.w.sym(op, mem.Addr(sym), symSpan*esize)
	return x, r, off, err
}

// checkElemSize refuses an element size no Elem has, for the byte-level
// moves (IPutBytes and the others, AlltoallsBytes).
func checkElemSize(op string, esize int) error {
	switch esize {
	case 1, 2, 4, 8, 16:
		return nil
	}
	return fmt.Errorf("shmem: %s of %d-byte elements: an element is 1, 2, 4, 8 or 16 bytes: %w", op, esize, core.ErrInvalid)
}

// stridedSpan is how many elements nelems elements at stride cover, or -1 if
// that overflows.
func stridedSpan(nelems, stride int) int {
	n := (nelems-1)*stride + 1
	if (nelems-1) != 0 && (n-1)/(nelems-1) != stride {
		return -1
	}
	return n
}

// blockedSpan is how many elements nblocks blocks of bsize at stride
// cover, from the first block's start to the last one's end, or -1 if
// that overflows.
func blockedSpan(nblocks, stride, bsize int) int {
	n := stridedSpan(nblocks, stride)
	if n < 0 || n-1 > math.MaxInt-bsize {
		return -1
	}
	return n - 1 + bsize
}
