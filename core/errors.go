package core

import (
	"errors"
	"fmt"
	"strings"
)

// The sentinel errors. Every error returned by core, a provider or shmem
// unwraps to at most one of these, so callers branch with errors.Is and read
// the detail from the typed error that wraps it.
var (
	ErrNotSupported = errors.New("not supported")
	ErrInvalid      = errors.New("invalid argument")
	ErrOutOfBounds  = errors.New("out of bounds")
	ErrPeerLost     = errors.New("peer lost")
	ErrTimeout      = errors.New("timed out")
	ErrClosed       = errors.New("closed")
	ErrNoMemory     = errors.New("out of memory")
)

// PEError reports a PE number outside the job.
type PEError struct {
	PE, NPEs int
}

func (e *PEError) Error() string {
	return fmt.Sprintf("PE %d out of range: the job has PEs 0..%d", e.PE, e.NPEs-1)
}

func (e *PEError) Unwrap() error { return ErrInvalid }

// BoundsError reports an access that does not lie inside a symmetric region.
type BoundsError struct {
	Offset, Len, Size int
}

func (e *BoundsError) Error() string {
	return fmt.Sprintf("access of %d bytes at offset %d lies outside the symmetric region of %d bytes",
		e.Len, e.Offset, e.Size)
}

func (e *BoundsError) Unwrap() error { return ErrOutOfBounds }

// AlignError reports an atomic operation on a misaligned address.
type AlignError struct {
	Offset, Align int
}

func (e *AlignError) Error() string {
	return fmt.Sprintf("atomic at offset %d is not %d-byte aligned", e.Offset, e.Align)
}

func (e *AlignError) Unwrap() error { return ErrInvalid }

// PeerLostError reports that a PE left the job without finalizing, or that
// its connection broke. PE is -1 when what was lost is the job's bootstrap
// store rather than a PE.
type PeerLostError struct {
	PE     int
	Reason string
}

func (e *PeerLostError) Error() string {
	who := fmt.Sprintf("PE %d", e.PE)
	if e.PE < 0 {
		who = "the job's bootstrap store"
	}
	if e.Reason == "" {
		return who + " lost"
	}
	return who + " lost: " + e.Reason
}

func (e *PeerLostError) Unwrap() error { return ErrPeerLost }

// UnknownProviderError reports a provider name that is not registered.
type UnknownProviderError struct {
	Name  string
	Known []string
}

func (e *UnknownProviderError) Error() string {
	return fmt.Sprintf("unknown provider %q (known providers: %s)", e.Name, strings.Join(e.Known, ", "))
}

func (e *UnknownProviderError) Unwrap() error { return ErrInvalid }

// EnvError reports a malformed or missing environment variable, naming the
// accepted forms.
type EnvError struct {
	Var, Value string
	Allowed    string
	// Unset: the variable is required and not set (Value is empty).
	Unset bool
	// Secret: Value is a secret, so the message gives its length only.
	Secret bool
}

func (e *EnvError) Error() string {
	switch {
	case e.Unset:
		return fmt.Sprintf("%s is not set: it must be %s", e.Var, e.Allowed)
	case e.Secret:
		return fmt.Sprintf("%s %s is malformed: allowed %s", e.Var, SecretShown(e.Value), e.Allowed)
	}
	return fmt.Sprintf("%s=%q is malformed: allowed %s", e.Var, e.Value, e.Allowed)
}

func (e *EnvError) Unwrap() error { return ErrInvalid }

// OpError records the operation, PE and provider an error happened in.
type OpError struct {
	Op       string // "put", "get", "atomic", "quiet", "open", ...
	PE       int    // target PE, or -1 when the operation has none
	Provider string
	Err      error
}

func (e *OpError) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(e.Op)
	if e.PE >= 0 {
		fmt.Fprintf(&b, " PE %d", e.PE)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *OpError) Unwrap() error { return e.Err }
