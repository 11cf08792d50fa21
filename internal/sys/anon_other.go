//go:build !linux

package sys

import (
	"errors"
	"syscall"
	"time"
)

// MapPrivate is not implemented on this system.
func MapPrivate(size int) ([]byte, error) { return nil, errors.ErrUnsupported }

// Revoke is not implemented on this system.
func Revoke(b []byte) error { return errors.ErrUnsupported }

// SetTCPUserTimeout is not implemented on this system.
func SetTCPUserTimeout(rc syscall.RawConn, d time.Duration) error { return errors.ErrUnsupported }

// ShareInPlace is not implemented on this system.
func ShareInPlace(path string, b []byte) error { return errors.ErrUnsupported }

// MapSharedAt is not implemented on this system.
func MapSharedAt(path string, b []byte) error { return errors.ErrUnsupported }

// Unshare is not implemented on this system.
func Unshare(b []byte) error { return errors.ErrUnsupported }
