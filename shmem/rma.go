package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Symmetric objects are ordinary Go slices that alias the symmetric heap,
// as Malloc returns them. An operation translates the slice's address into
// an offset in the heap, which is the same on every PE.

// Put copies src into dst on PE pe (shmem_put). dst is symmetric and must
// hold at least len(src) elements; src may be any slice and may be reused
// when Put returns. The data is complete at pe after Quiet.
func Put[T Elem](c Ctx, dst, src []T, pe int) error {
	x, r, off, b, err := transfer(c, "put", dst, src)
	if len(b) == 0 {
		return err
	}
	if isValue(off, b) {
		return x.ep.PutValue(pe, r, off, mem.LoadValue(b, 0, len(b)), len(b))
	}
	return x.ep.Put(pe, r, off, b)
}

// Get copies len(dst) elements from the symmetric src on PE pe into dst
// (shmem_get) and returns when dst holds them.
func Get[T Elem](c Ctx, dst, src []T, pe int) error {
	x, r, off, b, err := transfer(c, "get", src, dst)
	if len(b) == 0 {
		return err
	}
	if isValue(off, b) {
		v, err := x.ep.GetValue(pe, r, off, len(b))
		if err == nil {
			mem.StoreValue(b, 0, v, len(b))
		}
		return err
	}
	return x.ep.Get(pe, r, off, b)
}

// isValue reports whether a blocking transfer of b at heap offset off can
// move as one value (PutValue, GetValue): 1, 2, 4 or 8 bytes, aligned on
// both sides. A value spares the provider a memmove call, and is what a
// small put costs in C: one store.
func isValue(off int, b []byte) bool {
	n := len(b)
	return n&(n-1) == 0 && n <= 8 && (uintptr(off)|mem.Addr(b))&uintptr(n-1) == 0
}

// PutNBI is Put that may return before src has been read: src must not
// change until the next Quiet on c (shmem_put_nbi).
func PutNBI[T Elem](c Ctx, dst, src []T, pe int) error {
	x, r, off, b, err := transfer(c, "put", dst, src)
	if len(b) == 0 {
		return err
	}
	return x.ep.PutNBI(pe, r, off, b)
}

// GetNBI is Get that may return before dst is filled: dst holds the data
// after the next Quiet on c (shmem_get_nbi).
func GetNBI[T Elem](c Ctx, dst, src []T, pe int) error {
	x, r, off, b, err := transfer(c, "get", src, dst)
	if len(b) == 0 {
		return err
	}
	return x.ep.GetNBI(pe, r, off, b)
}

// transfer validates a move of len(local) elements between local and the
// symmetric sym, and returns the context, sym's region (the heap or a
// registered segment) and offset there, and local's bytes. It returns no
// bytes, and no error, for a zero-length move: the spec makes that a
// no-op.
func transfer[T Elem](c Ctx, op string, sym, local []T) (*Context, core.Region, int, []byte, error) {
	if len(local) == 0 {
		return nil, nil, 0, nil, nil
	}
	x := c.context()
	if len(sym) < len(local) {
		return nil, nil, 0, nil, shortError(op, len(sym), len(local))
	}
	r, off, err := x.w.sym(op, mem.Addr(sym), len(local)*mem.SizeOf[T]())
	if err != nil {
		return nil, nil, 0, nil, err
	}
	return x, r, off, mem.Bytes(local), nil
}

// PutMem is Put on bytes (shmem_putmem).
func PutMem(c Ctx, dst, src []byte, pe int) error { return Put(c, dst, src, pe) }

// GetMem is Get on bytes (shmem_getmem).
func GetMem(c Ctx, dst, src []byte, pe int) error { return Get(c, dst, src, pe) }

// P writes v to the symmetric *dst on PE pe (shmem_p).
func P[T Elem](c Ctx, dst *T, v T, pe int) error {
	x := c.context()
	size := mem.SizeOf[T]()
	r, off, err := x.w.sym("put", mem.PtrAddr(dst), size)
	if err != nil {
		return err
	}
	if size <= 8 {
		return x.ep.PutValue(pe, r, off, mem.ToBits(v), size)
	}
	return putWide(x, r, off, v, pe)
}

// putWide puts a value too wide for PutValue (complex128). It is a
// function of its own because its v escapes to the heap: in P, that would
// cost every small put an allocation.
func putWide[T Elem](x *Context, r core.Region, off int, v T, pe int) error {
	return x.ep.Put(pe, r, off, mem.ValueBytes(&v))
}

// G reads the symmetric *src on PE pe (shmem_g).
func G[T Elem](c Ctx, src *T, pe int) (T, error) {
	x := c.context()
	size := mem.SizeOf[T]()
	r, off, err := x.w.sym("get", mem.PtrAddr(src), size)
	if err != nil {
		return 0, err
	}
	if size <= 8 {
		u, err := x.ep.GetValue(pe, r, off, size)
		return mem.FromBits[T](u), err
	}
	return getWide[T](x, r, off, pe)
}

// getWide is putWide's counterpart for G.
func getWide[T Elem](x *Context, r core.Region, off int, pe int) (T, error) {
	var v T
	err := x.ep.Get(pe, r, off, mem.ValueBytes(&v))
	return v, err
}

// offset translates the n bytes at addr into an offset in the heap region,
// or fails if they do not lie inside the user part of the symmetric heap:
// for what only the heap holds (Free, Realloc, collectives' work areas).
// Operations that take any symmetric address use sym.
func (w *World) offset(op string, addr uintptr, n int) (int, error) {
	off, end := addr-w.base, uintptr(internalSize+w.heapSize)
	if addr < w.base || off < internalSize || off > end || uintptr(n) > end-off {
		return 0, w.addrError(op, addr, n)
	}
	return int(off), nil
}

// blockOffset is offset for the start of a block given to Free or
// Realloc: outside the heap it is no block at all, and its error says so.
func (w *World) blockOffset(op string, addr uintptr) (int, error) {
	off, err := w.offset(op, addr, 0)
	if ae, ok := err.(*AddrError); ok {
		ae.Block = true
	}
	return off, err
}

// AddrError reports a buffer that should be symmetric but does not lie
// inside the symmetric heap (nor, where the operation takes them, inside
// registered static data), or a block to free or reallocate that is not
// in the heap.
type AddrError struct {
	Op         string
	Addr       uintptr
	Len        int
	Start, End uintptr // the user part of the heap
	Static     string  // the registered segments, as a phrase
	// Block says that Addr is a block's start given to Free or Realloc,
	// not a buffer of Len bytes.
	Block bool
}

func (e *AddrError) Error() string {
	if e.Block {
		return fmt.Sprintf("shmem: %s: %#x is not a block of the symmetric heap: it lies outside the heap [%#x, %#x); %s takes only what Malloc, Calloc, Align or Realloc returned (shmem_malloc, shmem_calloc, shmem_align, shmem_realloc)",
			e.Op, e.Addr, e.Start, e.End, e.Op)
	}
	return fmt.Sprintf("shmem: %s: %d bytes at %#x are not inside the symmetric heap [%#x, %#x), %s; symmetric buffers come from Malloc or RegisterStatic",
		e.Op, e.Len, e.Addr, e.Start, e.End, e.Static)
}

func (e *AddrError) Unwrap() error { return core.ErrOutOfBounds }

func (w *World) addrError(op string, addr uintptr, n int) error {
	return &AddrError{Op: op, Addr: addr, Len: n, Start: w.base + internalSize, End: w.base + uintptr(internalSize+w.heapSize),
		Static: w.staticRanges()}
}

func shortError(op string, symLen, n int) error {
	return fmt.Errorf("shmem: %s of %d elements: the symmetric buffer holds only %d: %w", op, n, symLen, core.ErrInvalid)
}
