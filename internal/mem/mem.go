// Package mem holds the unsafe conversions between byte slices and typed
// slices, and atomics on words inside byte slices. It is one of the two
// places that use unsafe (the other is internal/sys, which maps memory);
// keeping them here keeps every other package safe Go. The exceptions are
// capi, whose cgo boundary trades in C pointers, and generated code;
// internal/layering fails on any other import of unsafe, test files
// included.
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

// ToBits and FromBits move a value of 1, 2, 4 or 8 bytes to and from the
// uint64 form values and atomics travel in: its memory, zero-extended. A
// float's memory is its IEEE bits, so one reinterpretation serves every
// type of those sizes.
func ToBits[T any](v T) uint64 {
	return LoadValue(ValueBytes(&v), 0, int(unsafe.Sizeof(v)))
}

// FromBits is the inverse of ToBits.
func FromBits[T any](u uint64) T {
	var v T
	StoreValue(ValueBytes(&v), 0, u, int(unsafe.Sizeof(v)))
	return v
}

// Load reads *p atomically. T is 2, 4 or 8 bytes and p aligned to its size;
// a 2-byte value is read through the aligned 4-byte word holding it, since
// sync/atomic has no 16-bit load.
func Load[T any](p *T) T {
	var v T
	switch unsafe.Sizeof(v) {
	case 8:
		*(*uint64)(unsafe.Pointer(&v)) = atomic.LoadUint64((*uint64)(unsafe.Pointer(p)))
	case 4:
		*(*uint32)(unsafe.Pointer(&v)) = atomic.LoadUint32((*uint32)(unsafe.Pointer(p)))
	case 2:
		// Step back to the aligned word with unsafe.Add, which keeps the
		// pointer inside the allocation as the garbage collector sees it.
		low := uintptr(unsafe.Pointer(p)) & 2
		word := atomic.LoadUint32((*uint32)(unsafe.Add(unsafe.Pointer(p), -int(low))))
		var half uint16
		if littleEndian == (low == 0) {
			half = uint16(word)
		} else {
			half = uint16(word >> 16)
		}
		*(*uint16)(unsafe.Pointer(&v)) = half
	default:
		panic("mem: Load of a type that is not 2, 4 or 8 bytes")
	}
	return v
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// StoreValue writes the size (1, 2, 4 or 8) low-order bytes of v at b[off:]
// in host byte order, as core.Endpoint.PutValue defines; the caller has
// checked the bounds. Aligned values are written with one store, so a
// concurrent aligned reader sees the old or the new value, never a mix.
func StoreValue(b []byte, off int, v uint64, size int) {
	p := unsafe.Pointer(&b[off])
	switch size {
	case 1:
		*(*uint8)(p) = uint8(v)
	case 2:
		*(*uint16)(p) = uint16(v)
	case 4:
		*(*uint32)(p) = uint32(v)
	case 8:
		*(*uint64)(p) = v
	default:
		panic("mem: StoreValue of an unvalidated size")
	}
}

// LoadValue is the inverse of StoreValue.
func LoadValue(b []byte, off int, size int) uint64 {
	p := unsafe.Pointer(&b[off])
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	case 8:
		return *(*uint64)(p)
	}
	panic("mem: LoadValue of an unvalidated size")
}
