package core

import "errors"

// errorCodes numbers the sentinels for errors that cross a process
// boundary: code i+1 is errorCodes[i], 0 is none. The numbering is part of
// the protocols that carry it (Agree's messages between PEs, a plugin's
// answers to its host), so a new sentinel is appended, never inserted.
var errorCodes = [...]error{ErrNotSupported, ErrInvalid, ErrOutOfBounds, ErrPeerLost, ErrTimeout, ErrClosed, ErrNoMemory}

// MaxErrorCode is the highest code ErrorCode returns.
const MaxErrorCode = uint8(len(errorCodes))

// ErrorCode is the wire code of the sentinel err unwraps to: 1 to
// MaxErrorCode, or 0 when err (nil included) unwraps to none. ErrorOfCode
// turns it back into the sentinel on the other side.
func ErrorCode(err error) uint8 {
	if err == nil {
		return 0
	}
	for i, s := range errorCodes {
		if errors.Is(err, s) {
			return uint8(i + 1)
		}
	}
	return 0
}

// ErrorOfCode is the sentinel a code from ErrorCode stands for: nil for 0.
// ok is false for a code above MaxErrorCode, which no sentinel has: a
// peer that sends one speaks another version of the protocol, or garbage.
func ErrorOfCode(code uint8) (sentinel error, ok bool) {
	switch {
	case code == 0:
		return nil, true
	case code > MaxErrorCode:
		return nil, false
	}
	return errorCodes[code-1], true
}

// RemoteError is an error that happened in another process and crossed
// over as its text and its sentinel's code (see ErrorCode): another PE's,
// as Agree delivers it, or a plugin's. It unwraps to the same sentinel as
// the original, so errors.Is works across the boundary.
type RemoteError struct {
	PE   int    // the PE it happened on, or -1 when the process is not a PE
	Msg  string // the original's text
	Kind error  // the sentinel the original unwrapped to, or nil
}

func (e *RemoteError) Error() string {
	if e.PE < 0 {
		return e.Msg
	}
	return "PE " + itoa(e.PE) + ": " + e.Msg
}

func (e *RemoteError) Unwrap() error { return e.Kind }
