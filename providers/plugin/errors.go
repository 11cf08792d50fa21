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

// encodeErr is the wire form of err, nil for nil: its text and the code
// of its sentinel (core.ErrorCode). A core.OpError loses its frame
// (operation, PE, provider): the host adds its own.
func encodeErr(err error) *pb.Error {
	if err == nil {
		return nil
	}
	var op *core.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	return &pb.Error{Msg: err.Error(), Kind: uint32(core.ErrorCode(err))}
}

// decodeErr is the inverse of encodeErr: a *core.RemoteError with PE -1,
// for the plugin is not a PE, that unwraps to the same core sentinel as
// the original, so errors.Is works across the process boundary. A kind
// without a sentinel is garbage, reported as such rather than dropped.
func decodeErr(e *pb.Error) (error, error) {
	if e == nil {
		return nil, nil
	}
	kind, ok := core.ErrorOfCode(uint8(e.Kind))
	if !ok || e.Kind > uint32(core.MaxErrorCode) {
		return nil, fmt.Errorf("error kind %d (want 0..%d)", e.Kind, core.MaxErrorCode)
	}
	if e.Msg == "" {
		return nil, errors.New("error without a message")
	}
	return &core.RemoteError{PE: -1, Msg: e.Msg, Kind: kind}, nil
}

// garbage marks a protocol violation by the plugin.
func garbage(format string, args ...any) error {
	return fmt.Errorf("answered garbage: %s: %w", fmt.Sprintf(format, args...), core.ErrInvalid)
}
