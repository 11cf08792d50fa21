package shmem

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Atomic memory operations on a symmetric variable *dst on PE pe. They are
// atomic with respect to every other atomic on the same variable, from any
// PE and any context. Fetching forms return the value held before.

func amoOffset[T AMOExt](x *Context, dst *T) (core.Region, int, error) {
	return x.w.sym("atomic", mem.PtrAddr(dst), mem.SizeOf[T]())
}

func fetchOp[T AMOExt](c Ctx, dst *T, op core.AtomicOp, v, cmp T, pe int) (T, error) {
	x := c.context()
	r, off, err := amoOffset(x, dst)
	if err != nil {
		return 0, err
	}
	old, err := x.ep.FetchAtomic(pe, r, off, op, atomicType[T](), mem.ToBits(v), mem.ToBits(cmp))
	return mem.FromBits[T](old), err
}

func postOp[T AMOExt](c Ctx, dst *T, op core.AtomicOp, v T, pe int) error {
	x := c.context()
	r, off, err := amoOffset(x, dst)
	if err != nil {
		return err
	}
	return x.ep.Atomic(pe, r, off, op, atomicType[T](), mem.ToBits(v))
}

// AtomicFetch returns *dst on pe (shmem_atomic_fetch).
func AtomicFetch[T AMOExt](c Ctx, dst *T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicRead, 0, 0, pe)
}

// AtomicSet writes v to *dst on pe (shmem_atomic_set).
func AtomicSet[T AMOExt](c Ctx, dst *T, v T, pe int) error {
	return postOp(c, dst, core.AtomicWrite, v, pe)
}

// AtomicSwap writes v to *dst on pe and returns the old value (shmem_atomic_swap).
func AtomicSwap[T AMOExt](c Ctx, dst *T, v T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicSwap, v, 0, pe)
}

// AtomicCompareSwap writes v to *dst on pe if it holds cond, and returns
// the old value either way (shmem_atomic_compare_swap).
func AtomicCompareSwap[T AMOInt](c Ctx, dst *T, cond, v T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicCSwap, v, cond, pe)
}

// AtomicFetchAdd adds v to *dst on pe and returns the old value (shmem_atomic_fetch_add).
func AtomicFetchAdd[T AMOInt](c Ctx, dst *T, v T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicAdd, v, 0, pe)
}

// AtomicAdd adds v to *dst on pe (shmem_atomic_add).
func AtomicAdd[T AMOInt](c Ctx, dst *T, v T, pe int) error {
	return postOp(c, dst, core.AtomicAdd, v, pe)
}

// AtomicFetchInc adds one to *dst on pe and returns the old value (shmem_atomic_fetch_inc).
func AtomicFetchInc[T AMOInt](c Ctx, dst *T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicAdd, 1, 0, pe)
}

// AtomicInc adds one to *dst on pe (shmem_atomic_inc).
func AtomicInc[T AMOInt](c Ctx, dst *T, pe int) error {
	return postOp(c, dst, core.AtomicAdd, 1, pe)
}

// AtomicFetchAnd, AtomicFetchOr and AtomicFetchXor combine v into *dst on
// pe bitwise and return the old value; AtomicAnd, AtomicOr and AtomicXor do
// not fetch (shmem_atomic_[fetch_]{and,or,xor}).
func AtomicFetchAnd[T AMOInt](c Ctx, dst *T, v T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicAnd, v, 0, pe)
}

func AtomicFetchOr[T AMOInt](c Ctx, dst *T, v T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicOr, v, 0, pe)
}

func AtomicFetchXor[T AMOInt](c Ctx, dst *T, v T, pe int) (T, error) {
	return fetchOp(c, dst, core.AtomicXor, v, 0, pe)
}

func AtomicAnd[T AMOInt](c Ctx, dst *T, v T, pe int) error {
	return postOp(c, dst, core.AtomicAnd, v, pe)
}

func AtomicOr[T AMOInt](c Ctx, dst *T, v T, pe int) error {
	return postOp(c, dst, core.AtomicOr, v, pe)
}

func AtomicXor[T AMOInt](c Ctx, dst *T, v T, pe int) error {
	return postOp(c, dst, core.AtomicXor, v, pe)
}
