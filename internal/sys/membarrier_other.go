//go:build !linux

package sys

import "errors"

// RegisterGlobalBarrier is not implemented on this system.
func RegisterGlobalBarrier() error { return errors.ErrUnsupported }

// GlobalBarrier is not implemented on this system.
func GlobalBarrier() error { return errors.ErrUnsupported }
