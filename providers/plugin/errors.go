package plugin

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// Error reports a plugin that failed as a program: it could not be
// started, failed the handshake, answered something the protocol does not
// allow, died, or did not answer in time. It names the plugin and its
// executable, and unwraps to the core sentinel that says which:
// core.ErrInvalid (handshake or garbage), core.ErrPeerLost (the process
// died or its connection broke) or core.ErrTimeout (it hung).
type Error struct {
	Name string // the provider name, from the executable's name
	Path string // the executable
	Op   string // what the host was doing: "start", "info", "put", ...
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("plugin %s (%s): %s: %v", e.Name, e.Path, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// RemoteError is an error the wrapped provider returned inside the plugin
// process. It unwraps to the same core sentinel as the original, so
// errors.Is works across the process boundary.
type RemoteError struct {
	Msg  string
	Kind error // a core sentinel, or nil
}

func (e *RemoteError) Error() string { return e.Msg }
func (e *RemoteError) Unwrap() error { return e.Kind }

// sentinels are core's, numbered on the wire from 1 in this order; the
// order is part of the protocol.
var sentinels = []error{core.ErrNotSupported, core.ErrInvalid, core.ErrOutOfBounds,
	core.ErrPeerLost, core.ErrTimeout, core.ErrClosed, core.ErrNoMemory}

// encodeErr is the wire form of err, nil for nil. A core.OpError loses its
// frame (operation, PE, provider): the host adds its own.
func encodeErr(err error) *pb.Error {
	if err == nil {
		return nil
	}
	var op *core.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	e := &pb.Error{Msg: err.Error()}
	for i, s := range sentinels {
		if errors.Is(err, s) {
			e.Kind = uint32(i + 1)
			break
		}
	}
	return e
}

// decodeErr is the inverse of encodeErr. A kind outside the list is
// garbage, reported as such rather than dropped.
func decodeErr(e *pb.Error) (error, error) {
	if e == nil {
		return nil, nil
	}
	if e.Kind > uint32(len(sentinels)) {
		return nil, fmt.Errorf("error kind %d (want 0..%d)", e.Kind, len(sentinels))
	}
	if e.Msg == "" {
		return nil, errors.New("error without a message")
	}
	re := &RemoteError{Msg: e.Msg}
	if e.Kind > 0 {
		re.Kind = sentinels[e.Kind-1]
	}
	return re, nil
}

// garbage marks a protocol violation by the plugin.
func garbage(format string, args ...any) error {
	return fmt.Errorf("answered garbage: %s: %w", fmt.Sprintf(format, args...), core.ErrInvalid)
}
