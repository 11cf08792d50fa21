package core

// PutFenceSignal is a put-with-signal out of Endpoint's own operations:
// Put, Fence, and the signal's Atomic (the Atomic alone for an empty src).
// It is Endpoint.PutSignal for an endpoint without CapPutSignal, and an
// endpoint with it falls back on it for what it does not carry as one. A
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
