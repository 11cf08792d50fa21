//go:build linux

package sys

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ProcessAlive reports whether a process with the given id exists and has
// not exited. It sends signal 0, which checks existence without delivering
// anything (a process owned by another user exists too), and then reads
// the process's state, because a process that died stays a zombie until
// its parent reaps it, and a zombie is dead to its peers.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc to tell: the signal said it exists
	}
	// The state follows the command name, which is in parentheses and
	// may itself hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	switch stat[i+2] {
	case 'Z', 'X', 'x':
		return false
	}
	return true
}
