// Package mem holds the unsafe conversions between byte slices and typed
// slices, and atomics on words inside byte slices. It is one of the two
// places that use unsafe (the other is internal/sys, which maps memory);
// keeping them here keeps every other package safe Go.
package mem

import (
	"sync/atomic"
	"unsafe"

	"github.com/goshmem/goshmem/core"
)

// Slice reinterprets b as a []T of len(b)/sizeof(T) elements. b must be
// aligned for T; the result aliases b.
func Slice[T any](b []byte) []T {
	var zero T
	sz := int(unsafe.Sizeof(zero))
	if len(b) < sz || sz == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}

// Bytes reinterprets s as its bytes; the result aliases s.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// ValueBytes returns the bytes of *p; the result aliases *p.
func ValueBytes[T any](p *T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(zero))
}

// Addr is the address of the first element of s (of its backing array for
// an empty s with capacity), or 0 for a nil s.
func Addr[T any](s []T) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
}

// PtrAddr is the address p points at.
func PtrAddr[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

// SizeOf is the size of T in bytes.
func SizeOf[T any]() int {
	var zero T
	return int(unsafe.Sizeof(zero))
}

// Word32 and Word64 return the word at b[off:]; off must be aligned and in
// bounds (core.CheckAtomic), which the callers have verified.
func Word32(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
func Word64(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

// Atomic executes op on the word of type t at b[off:] with sync/atomic and
// returns the value it held before. The caller has validated op, t, the
// bounds and the alignment with core.CheckAtomic. Values travel as uint64:
// 32-bit values in the low half, floats as their IEEE bits.
func Atomic(b []byte, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) uint64 {
	if t.Size() == 4 {
		return uint64(atomic32(Word32(b, off), op, uint32(operand), uint32(compare)))
	}
	return atomic64(Word64(b, off), op, operand, compare)
}

func atomic32(p *uint32, op core.AtomicOp, v, cmp uint32) uint32 {
	switch op {
	case core.AtomicRead:
		return atomic.LoadUint32(p)
	case core.AtomicWrite, core.AtomicSwap:
		return atomic.SwapUint32(p, v)
	case core.AtomicAdd:
		return atomic.AddUint32(p, v) - v
	case core.AtomicAnd:
		return atomic.AndUint32(p, v)
	case core.AtomicOr:
		return atomic.OrUint32(p, v)
	case core.AtomicXor:
		for {
			old := atomic.LoadUint32(p)
			if atomic.CompareAndSwapUint32(p, old, old^v) {
				return old
			}
		}
	case core.AtomicCSwap:
		for {
			if atomic.CompareAndSwapUint32(p, cmp, v) {
				return cmp
			}
			if old := atomic.LoadUint32(p); old != cmp {
				return old
			}
		}
	}
	panic("mem: unvalidated atomic op " + op.String())
}

func atomic64(p *uint64, op core.AtomicOp, v, cmp uint64) uint64 {
	switch op {
	case core.AtomicRead:
		return atomic.LoadUint64(p)
	case core.AtomicWrite, core.AtomicSwap:
		return atomic.SwapUint64(p, v)
	case core.AtomicAdd:
		return atomic.AddUint64(p, v) - v
	case core.AtomicAnd:
		return atomic.AndUint64(p, v)
	case core.AtomicOr:
		return atomic.OrUint64(p, v)
	case core.AtomicXor:
		for {
			old := atomic.LoadUint64(p)
			if atomic.CompareAndSwapUint64(p, old, old^v) {
				return old
			}
		}
	case core.AtomicCSwap:
		for {
			if atomic.CompareAndSwapUint64(p, cmp, v) {
				return cmp
			}
			if old := atomic.LoadUint64(p); old != cmp {
				return old
			}
		}
	}
	panic("mem: unvalidated atomic op " + op.String())
}

// ToBits and FromBits move a value of an AMO type to and from the uint64
// form atomics travel in.
func ToBits[T any](v T) uint64 {
	// A float's memory is its IEEE bits, so one reinterpretation serves
	// every 4- and 8-byte type.
	switch unsafe.Sizeof(v) {
	case 4:
		return uint64(*(*uint32)(unsafe.Pointer(&v)))
	case 8:
		return *(*uint64)(unsafe.Pointer(&v))
	}
	panic("mem: ToBits of a type that is neither 4 nor 8 bytes")
}

// FromBits is the inverse of ToBits.
func FromBits[T any](u uint64) T {
	var v T
	switch unsafe.Sizeof(v) {
	case 4:
		*(*uint32)(unsafe.Pointer(&v)) = uint32(u)
	case 8:
		*(*uint64)(unsafe.Pointer(&v)) = u
	default:
		panic("mem: FromBits of a type that is neither 4 nor 8 bytes")
	}
	return v
}
