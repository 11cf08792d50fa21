//go:build linux

package sys

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ProcessAlive reports whether a process with the given id exists (it may
// be a zombie not yet reaped). It sends signal 0, which checks existence
// and permission without delivering anything: a process owned by another
// user exists too.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
