package core

import "strconv"

// CheckPE validates a target PE number.
func CheckPE(pe, npes int) error {
	if uint(pe) >= uint(npes) {
		return &PEError{PE: pe, NPEs: npes}
	}
	return nil
}

// The region prologue: every provider checks an operation's PE and range
// with these, so that what is valid, and the errors that say why not,
// are the same whatever carries the operation. A fast path asks
// AccessValid, which inlines and allocates nothing, and sends what it
// refuses to a slow path that asks CheckRMA (or CheckValue, CheckAtomic)
// for the error naming what is wrong and what is allowed.

// InBounds reports whether n bytes at off lie within size bytes: off and
// n are not negative and off+n is at most size, computed without
// overflow. It inlines.
func InBounds[T ~int | ~int64 | ~uint64](off, n, size T) bool {
	return off >= 0 && n >= 0 && off <= size && n <= size-off
}

// AccessValid reports whether an access of n > 0 bytes at off, on pe of
// npes, in a region of size bytes is one CheckRMA accepts: a fast path's
// check. An access of 0 bytes is refused too, so that the slow path,
// which does nothing for it, takes it. It inlines.
func AccessValid(pe, npes, off, n, size int) bool {
	// InBounds for n > 0 (size-n cannot overflow), spelled out: the
	// fast paths that call this inline only within a tight budget.
	return uint(pe) < uint(npes) && n > 0 && off >= 0 && off <= size-n
}

// CheckBounds is a *BoundsError unless n bytes at off lie within a region
// of size bytes.
func CheckBounds(off, n, size int) error {
	if !InBounds(off, n, size) {
		return &BoundsError{Offset: off, Len: n, Size: size}
	}
	return nil
}

// CheckRMA validates an access of n bytes at off, on pe, in a region of
// size bytes. Providers call it before touching memory; it allocates only
// when it fails.
func CheckRMA(pe, npes, off, n, size int) error {
	if err := CheckPE(pe, npes); err != nil {
		return err
	}
	return CheckBounds(off, n, size)
}

// CheckAtomic validates an atomic of type t and operation op at off, on pe,
// in a region of size bytes, against what the provider supports.
func CheckAtomic(pe, npes, off, size int, op AtomicOp, t AtomicType, sup *AtomicSupport) error {
	if !sup.Supports(op, t) {
		if !op.Valid() || !t.Valid() {
			return &AtomicOpError{Op: op, Type: t, Err: ErrInvalid}
		}
		return &AtomicOpError{Op: op, Type: t, Err: ErrNotSupported}
	}
	w := t.Size()
	if err := CheckRMA(pe, npes, off, w, size); err != nil {
		return err
	}
	if off&(w-1) != 0 {
		return &AlignError{Offset: off, Align: w}
	}
	return nil
}

// AtomicOpError reports an atomic operation or type that is undefined
// (ErrInvalid) or that the provider does not execute (ErrNotSupported).
type AtomicOpError struct {
	Op   AtomicOp
	Type AtomicType
	Err  error
}

func (e *AtomicOpError) Error() string {
	return "atomic " + e.Op.String() + " on " + e.Type.String() + ": " + e.Err.Error()
}

func (e *AtomicOpError) Unwrap() error { return e.Err }

// CheckValue validates a PutValue or GetValue of size bytes at off on pe,
// in a region of size regionSize.
func CheckValue(pe, npes, off, size, regionSize int) error {
	switch size {
	case 1, 2, 4, 8:
	default:
		return &ValueSizeError{Size: size}
	}
	return CheckRMA(pe, npes, off, size, regionSize)
}

// ValueSizeError reports a PutValue or GetValue of a size other than 1, 2,
// 4 or 8 bytes.
type ValueSizeError struct{ Size int }

func (e *ValueSizeError) Error() string {
	return "value of " + itoa(e.Size) + " bytes: PutValue and GetValue move 1, 2, 4 or 8 bytes"
}

func (e *ValueSizeError) Unwrap() error { return ErrInvalid }

func itoa(n int) string { return strconv.Itoa(n) }
