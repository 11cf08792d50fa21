package core

import (
	"fmt"
	"strings"
)

// AtomicOp is the operation of an atomic memory operation.
type AtomicOp uint8

const (
	AtomicRead  AtomicOp = iota + 1 // fetch: operand unused
	AtomicWrite                     // set
	AtomicAdd                       // add, inc (operand 1)
	AtomicAnd
	AtomicOr
	AtomicXor
	AtomicSwap  // fetch the old value, write the operand
	AtomicCSwap // write the operand if the old value equals compare
	atomicOpEnd
)

var atomicOpNames = [...]string{"", "read", "write", "add", "and", "or", "xor", "swap", "cswap"}

func (o AtomicOp) String() string {
	if o > 0 && o < atomicOpEnd {
		return atomicOpNames[o]
	}
	return fmt.Sprintf("AtomicOp(%d)", uint8(o))
}

// Valid reports whether o is a defined operation.
func (o AtomicOp) Valid() bool { return o > 0 && o < atomicOpEnd }

// AtomicType is the type of the target of an atomic operation. Values travel
// as uint64: integers zero-extended from their bits, floats as their IEEE
// bits.
type AtomicType uint8

const (
	Int32 AtomicType = iota + 1
	Uint32
	Int64
	Uint64
	Float32
	Float64
	atomicTypeEnd
)

var atomicTypeNames = [...]string{"", "int32", "uint32", "int64", "uint64", "float32", "float64"}

func (t AtomicType) String() string {
	if t > 0 && t < atomicTypeEnd {
		return atomicTypeNames[t]
	}
	return fmt.Sprintf("AtomicType(%d)", uint8(t))
}

// Valid reports whether t is a defined type.
func (t AtomicType) Valid() bool { return t > 0 && t < atomicTypeEnd }

// Size is the width of t in bytes; atomics must be aligned to it.
func (t AtomicType) Size() int {
	switch t {
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

// OpSet is a set of atomic operations.
type OpSet uint16

// Ops builds an OpSet.
func Ops(ops ...AtomicOp) OpSet {
	var s OpSet
	for _, o := range ops {
		s |= 1 << o
	}
	return s
}

// Has reports whether o is in s.
func (s OpSet) Has(o AtomicOp) bool { return s&(1<<o) != 0 }

func (s OpSet) String() string {
	var names []string
	for o := AtomicRead; o < atomicOpEnd; o++ {
		if s.Has(o) {
			names = append(names, o.String())
		}
	}
	return strings.Join(names, ",")
}

// AtomicSupport lists, per type, the operations a provider supports, like
// libfabric's fi_atomicvalid.
type AtomicSupport [atomicTypeEnd]OpSet

// Supports reports whether op on t is supported.
func (a *AtomicSupport) Supports(op AtomicOp, t AtomicType) bool {
	return t.Valid() && op.Valid() && a[t].Has(op)
}

// Types lists the types with at least one supported operation.
func (a *AtomicSupport) Types() []AtomicType {
	var out []AtomicType
	for t := Int32; t < atomicTypeEnd; t++ {
		if a[t] != 0 {
			out = append(out, t)
		}
	}
	return out
}

// IntOps are the operations OpenSHMEM defines on its standard AMO integer types.
var IntOps = Ops(AtomicRead, AtomicWrite, AtomicAdd, AtomicAnd, AtomicOr, AtomicXor, AtomicSwap, AtomicCSwap)

// FloatOps are the operations OpenSHMEM defines on float and double.
var FloatOps = Ops(AtomicRead, AtomicWrite, AtomicSwap)

// FullAtomics is the support of a provider that executes every OpenSHMEM AMO.
func FullAtomics() AtomicSupport {
	var a AtomicSupport
	a[Int32], a[Uint32], a[Int64], a[Uint64] = IntOps, IntOps, IntOps, IntOps
	a[Float32], a[Float64] = FloatOps, FloatOps
	return a
}
