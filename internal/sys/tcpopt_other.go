//go:build !linux

package sys

import (
	"errors"
	"syscall"
	"time"
)

// TCPUserTimeout is not implemented on this system.
func TCPUserTimeout(rc syscall.RawConn) (time.Duration, error) { return 0, errors.ErrUnsupported }
