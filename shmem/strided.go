package shmem

import (
	"fmt"
	"math"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// IPut copies nelems elements of src, taken every srcStride elements, to
// the symmetric dst on PE pe, placed every dstStride elements
// (shmem_iput). Strides count elements and are at least 1. It returns when
// src may be reused; the data is complete at pe after Quiet.
func IPut[T Elem](c Ctx, dst, src []T, dstStride, srcStride, nelems, pe int) error {
	x, r, off, err := strided(c, "iput", dst, src, dstStride, srcStride, nelems)
	if err != nil || nelems == 0 {
		return err
	}
	if dstStride == 1 && srcStride == 1 {
		return x.ep.Put(pe, r, off, mem.Bytes(src[:nelems]))
	}
	size := mem.SizeOf[T]()
	for i := range nelems {
		o := off + i*dstStride*size
		var err error
		if size <= 8 {
			err = x.ep.PutValue(pe, r, o, mem.ToBits(src[i*srcStride]), size)
		} else {
			err = x.ep.Put(pe, r, o, mem.Bytes(src[i*srcStride:i*srcStride+1]))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// IGet copies nelems elements of the symmetric src on PE pe, taken every
// srcStride elements, into dst, placed every dstStride elements
// (shmem_iget). It returns when dst holds them.
func IGet[T Elem](c Ctx, dst, src []T, dstStride, srcStride, nelems, pe int) error {
	x, r, off, err := strided(c, "iget", src, dst, srcStride, dstStride, nelems)
	if err != nil || nelems == 0 {
		return err
	}
	if dstStride == 1 && srcStride == 1 {
		return x.ep.Get(pe, r, off, mem.Bytes(dst[:nelems]))
	}
	size := mem.SizeOf[T]()
	for i := range nelems {
		o := off + i*srcStride*size
		j := i * dstStride
		if size > 8 {
			if err := x.ep.Get(pe, r, o, mem.Bytes(dst[j:j+1])); err != nil {
				return err
			}
			continue
		}
		u, err := x.ep.GetValue(pe, r, o, size)
		if err != nil {
			return err
		}
		dst[j] = mem.FromBits[T](u)
	}
	return nil
}

// strided validates a strided move of nelems elements between the
// symmetric sym and local, and returns the context and sym's region and
// offset.
func strided[T Elem](c Ctx, op string, sym, local []T, symStride, localStride, nelems int) (*Context, core.Region, int, error) {
	if nelems < 0 {
		return nil, nil, 0, fmt.Errorf("shmem: %s of %d elements: the count must not be negative: %w", op, nelems, core.ErrInvalid)
	}
	if symStride < 1 || localStride < 1 {
		return nil, nil, 0, fmt.Errorf("shmem: %s: strides %d and %d: strides count elements and must be at least 1: %w",
			op, symStride, localStride, core.ErrInvalid)
	}
	if nelems == 0 {
		return nil, nil, 0, nil
	}
	symSpan, localSpan := stridedSpan(nelems, symStride), stridedSpan(nelems, localStride)
	if symSpan < 0 || localSpan < 0 {
		stride := symStride
		if symSpan >= 0 {
			stride = localStride
		}
		return nil, nil, 0, fmt.Errorf("shmem: %s of %d elements at a stride of %d overflows: the span is more than %d elements: %w",
			op, nelems, stride, math.MaxInt, core.ErrInvalid)
	}
	if len(sym) < symSpan || len(local) < localSpan {
		return nil, nil, 0, fmt.Errorf("shmem: %s of %d elements at strides %d (symmetric) and %d (local) needs %d and %d elements; the buffers hold %d and %d: %w",
			op, nelems, symStride, localStride, symSpan, localSpan, len(sym), len(local), core.ErrInvalid)
	}
	x := c.context()
	r, off, err := x.w.sym(op, mem.Addr(sym), symSpan*mem.SizeOf[T]())
	return x, r, off, err
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

// IBPut copies nblocks blocks of bsize contiguous elements from src to the
// symmetric dst on PE pe (shmem_ibput, OpenSHMEM 1.6): block i starts at
// element i*srcStride of src and lands at element i*dstStride of dst.
// Strides count elements and are at least 1. It returns when src may be
// reused; the data is complete at pe after Quiet. Blocks that are
// contiguous on both sides move as one put.
func IBPut[T Elem](c Ctx, dst, src []T, dstStride, srcStride, bsize, nblocks, pe int) error {
	x, r, off, err := blocked(c, "ibput", dst, src, dstStride, srcStride, bsize, nblocks)
	if err != nil || x == nil {
		return err
	}
	if dstStride == bsize && srcStride == bsize {
		return x.ep.Put(pe, r, off, mem.Bytes(src[:bsize*nblocks]))
	}
	size := mem.SizeOf[T]()
	for i := range nblocks {
		s := i * srcStride
		if err := x.ep.Put(pe, r, off+i*dstStride*size, mem.Bytes(src[s:s+bsize])); err != nil {
			return err
		}
	}
	return nil
}

// IBGet copies nblocks blocks of bsize contiguous elements of the
// symmetric src on PE pe into dst (shmem_ibget): block i starts at
// element i*srcStride of src and lands at element i*dstStride of dst. It
// returns when dst holds them.
func IBGet[T Elem](c Ctx, dst, src []T, dstStride, srcStride, bsize, nblocks, pe int) error {
	x, r, off, err := blocked(c, "ibget", src, dst, srcStride, dstStride, bsize, nblocks)
	if err != nil || x == nil {
		return err
	}
	if dstStride == bsize && srcStride == bsize {
		return x.ep.Get(pe, r, off, mem.Bytes(dst[:bsize*nblocks]))
	}
	size := mem.SizeOf[T]()
	for i := range nblocks {
		d := i * dstStride
		if err := x.ep.Get(pe, r, off+i*srcStride*size, mem.Bytes(dst[d:d+bsize])); err != nil {
			return err
		}
	}
	return nil
}

// blocked validates a move of nblocks blocks of bsize elements between
// the symmetric sym and local, and returns the context and sym's region
// and offset; a nil context where there is nothing to move.
func blocked[T Elem](c Ctx, op string, sym, local []T, symStride, localStride, bsize, nblocks int) (*Context, core.Region, int, error) {
	if bsize < 0 || nblocks < 0 {
		return nil, nil, 0, fmt.Errorf("shmem: %s of %d blocks of %d elements: the counts must not be negative: %w", op, nblocks, bsize, core.ErrInvalid)
	}
	if symStride < 1 || localStride < 1 {
		return nil, nil, 0, fmt.Errorf("shmem: %s: strides %d and %d: strides count elements and must be at least 1: %w",
			op, symStride, localStride, core.ErrInvalid)
	}
	if bsize == 0 || nblocks == 0 {
		return nil, nil, 0, nil
	}
	symSpan, localSpan := blockedSpan(nblocks, symStride, bsize), blockedSpan(nblocks, localStride, bsize)
	if symSpan < 0 || localSpan < 0 {
		return nil, nil, 0, fmt.Errorf("shmem: %s of %d blocks of %d elements at strides %d and %d overflows: a span is more than %d elements: %w",
			op, nblocks, bsize, symStride, localStride, math.MaxInt, core.ErrInvalid)
	}
	if len(sym) < symSpan || len(local) < localSpan {
		return nil, nil, 0, fmt.Errorf("shmem: %s of %d blocks of %d elements at strides %d (symmetric) and %d (local) needs %d and %d elements; the buffers hold %d and %d: %w",
			op, nblocks, bsize, symStride, localStride, symSpan, localSpan, len(sym), len(local), core.ErrInvalid)
	}
	x := c.context()
	if symSpan > math.MaxInt/mem.SizeOf[T]() {
		return nil, nil, 0, fmt.Errorf("shmem: %s: a span of %d elements is more bytes than %d: %w", op, symSpan, math.MaxInt, core.ErrInvalid)
	}
	r, off, err := x.w.sym(op, mem.Addr(sym), symSpan*mem.SizeOf[T]())
	return x, r, off, err
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
