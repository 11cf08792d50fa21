package core

import "strconv"

// CheckPE validates a target PE number.
func CheckPE(pe, npes int) error {
	if uint(pe) >= uint(npes) {
		return &PEError{PE: pe, NPEs: npes}
	}
	return nil
}

// CheckRMA validates an access of n bytes at off, on pe, in a region of
// size bytes. Providers call it before touching memory; it allocates only
// when it fails.
func CheckRMA(pe, npes, off, n, size int) error {
	if uint(pe) >= uint(npes) {
		return &PEError{PE: pe, NPEs: npes}
	}
	if off < 0 || n < 0 || off > size || n > size-off {
		return &BoundsError{Offset: off, Len: n, Size: size}
	}
	return nil
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
