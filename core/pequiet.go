package core

// PEQuieter is implemented by endpoints that can complete their
// operations to some PEs without waiting for those to the others
// (CapPEQuiet; OpenSHMEM 1.6's shmem_pe_quiet). QuietPEs returns when
// every put, atomic, put-with-signal and non-blocking get the endpoint
// issued to the PEs pes before the call is complete, as Quiet has them
// complete; it neither waits for nor completes the operations to other
// PEs, so a slow PE outside the list does not hold it up. PEs may repeat;
// an empty list completes nothing. A PE outside the job is a *PEError
// and nothing is waited for. It returns an error where a listed PE can
// no longer be reached (ErrPeerLost); the errors of single operations
// stay recorded for Quiet, which reports them.
type PEQuieter interface {
	QuietPEs(pes []int) error
}

// QuietPEs completes ep's operations to pes: through ep's QuietPEs where
// ep is a PEQuieter, else through its Quiet, which completes them with
// every other operation. An empty list completes nothing.
func QuietPEs(ep Endpoint, pes []int) error {
	if len(pes) == 0 {
		return nil
	}
	if q, ok := ep.(PEQuieter); ok {
		return q.QuietPEs(pes)
	}
	return ep.Quiet()
}

// AckHolder is implemented by domains whose operations to a PE complete
// when that PE's answer comes back (an acknowledgement of a put or of a
// non-fetching atomic). HoldAcks(pe, true) makes this PE set aside those
// answers from pe as they arrive, as if pe were slow to give them, so
// this PE's operations to pe that wait for one stay incomplete; what
// pe's operations do at pe is unchanged, and so is everything to other
// PEs. HoldAcks(pe, false) applies what was set aside and ends the hold.
// Answers a caller blocks for (a get's data, a fetching atomic's value)
// are not held. It is a hook for tests: the conformance suite holds one
// PE's acknowledgements to show, without depending on timing, that a
// PEQuieter's QuietPEs does not wait for that PE. Holding this PE's own
// number, or a PE outside the job, does nothing.
type AckHolder interface {
	HoldAcks(pe int, hold bool)
}
