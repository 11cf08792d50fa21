package core

// PutSignaler is implemented by endpoints that carry a put and the update
// of a signal word after it as one operation: the data and the signal
// travel in one message or one write, so the target applies them together
// and a PE waiting on the signal wakes once (libfabric's fi_writedata,
// OpenSHMEM's put-with-signal). Without it, PutSignal below issues Put,
// Fence and Atomic in turn, which order the same way.
type PutSignaler interface {
	// PutSignal puts src at off in pe's part of r, then applies op with
	// operand to the uint64 at sigOff in pe's part of sigR, such that the
	// signal is seen only once the data has landed. op is one of Atomic's
	// (AtomicWrite and AtomicAdd are OpenSHMEM's signal operations). It
	// returns when src may be reused; both are complete at the target after
	// Quiet, and the endpoint's counter counts them as the two operations
	// they are. With src empty it is the Atomic alone.
	PutSignal(pe int, r Region, off int, src []byte, sigR Region, sigOff int, op AtomicOp, operand uint64) error
}

// PutSignal puts src and then signals, as PutSignaler describes: through
// ep's own PutSignal if it has one, else by PutFenceSignal.
func PutSignal(ep Endpoint, pe int, r Region, off int, src []byte, sigR Region, sigOff int, op AtomicOp, operand uint64) error {
	if ps, ok := ep.(PutSignaler); ok {
		return ps.PutSignal(pe, r, off, src, sigR, sigOff, op, operand)
	}
	return PutFenceSignal(ep, pe, r, off, src, sigR, sigOff, op, operand)
}

// PutFenceSignal is a put-with-signal out of Endpoint's own operations:
// Put, Fence, and the signal's Atomic (the Atomic alone for an empty src).
// A PutSignaler falls back on it for what it does not carry as one. A
// signal operation that is not one of Atomic's, or a misaligned signal
// word, is refused before anything is put; what only the endpoint can
// check of the signal (its bounds, its region) fails its Atomic, after
// the put.
func PutFenceSignal(ep Endpoint, pe int, r Region, off int, src []byte, sigR Region, sigOff int, op AtomicOp, operand uint64) error {
	if err := CheckSignal(sigOff, op); err != nil {
		return &OpError{Op: "put-signal", PE: pe, Err: err}
	}
	if len(src) > 0 {
		if err := ep.Put(pe, r, off, src); err != nil {
			return err
		}
		if err := ep.Fence(); err != nil {
			return err
		}
	}
	return ep.Atomic(pe, sigR, sigOff, op, Uint64, operand)
}

// CheckSignal validates what a put-with-signal's signal needs beyond an
// atomic's checks: one of the operations Atomic takes, none that fetches
// or compares, on a word aligned to its 8 bytes.
func CheckSignal(off int, op AtomicOp) error {
	switch op {
	case AtomicWrite, AtomicAdd, AtomicAnd, AtomicOr, AtomicXor:
	default:
		return &AtomicOpError{Op: op, Type: Uint64, Err: ErrInvalid}
	}
	if off&7 != 0 {
		return &AlignError{Offset: off, Align: 8}
	}
	return nil
}
