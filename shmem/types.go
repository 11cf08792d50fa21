package shmem

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Elem is the set of element types that RMA moves: the spec's standard
// RMA types, as Go spells them.
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int |
		~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// AMOInt is the set of types the standard atomic operations act on (the
// spec's standard AMO types: int, long, long long, their unsigned forms,
// int32, int64, uint32, uint64, size_t and ptrdiff_t).
type AMOInt interface {
	~int32 | ~int64 | ~int | ~uint32 | ~uint64 | ~uint | ~uintptr
}

// AMOExt is the set of types the extended atomic operations (fetch, set,
// swap) act on: AMOInt plus float32 and float64.
type AMOExt interface {
	AMOInt | ~float32 | ~float64
}

// WaitElem is the set of types point-to-point synchronisation waits on.
type WaitElem interface {
	~int16 | ~int32 | ~int64 | ~int | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr
}

// Cmp is a comparison for WaitUntil and Test.
type Cmp uint8

const (
	CmpEQ Cmp = iota + 1 // ==
	CmpNE                // !=
	CmpGT                // >
	CmpGE                // >=
	CmpLT                // <
	CmpLE                // <=
)

var cmpNames = [...]string{"", "==", "!=", ">", ">=", "<", "<="}

func (c Cmp) String() string {
	if c >= CmpEQ && c <= CmpLE {
		return cmpNames[c]
	}
	return "Cmp(?)"
}

func compare[T WaitElem](a T, c Cmp, b T) bool {
	switch c {
	case CmpEQ:
		return a == b
	case CmpNE:
		return a != b
	case CmpGT:
		return a > b
	case CmpGE:
		return a >= b
	case CmpLT:
		return a < b
	case CmpLE:
		return a <= b
	}
	return false
}

// atomicType maps an AMO element type to the type the providers execute.
// Constants fold per instantiation, so this costs nothing at run time.
func atomicType[T AMOExt]() core.AtomicType {
	var one, m1 T = 1, 0
	m1--
	isFloat := one/2 != 0
	switch size := mem.SizeOf[T](); {
	case isFloat && size == 4:
		return core.Float32
	case isFloat:
		return core.Float64
	case size == 4 && m1 < 0:
		return core.Int32
	case size == 4:
		return core.Uint32
	case m1 < 0:
		return core.Int64
	}
	return core.Uint64
}
