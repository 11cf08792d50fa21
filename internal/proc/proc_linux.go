//go:build linux

package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Alive reports whether a process with the given id exists and has
// not exited. It sends signal 0, which checks existence without delivering
// anything (a process owned by another user exists too), and then reads
// the process's state, because a process that died stays a zombie until
// its parent reaps it, and a zombie is dead to its peers.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
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

// Start is when the process with the given id started, in clock
// ticks since boot (field 22 of /proc/PID/stat), and whether it could be
// read. A pid and its start time name one process for good: a pid the
// kernel handed to a new process comes with a later start.
func Start(pid int) (uint64, bool) {
	if pid <= 0 {
		return 0, false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	// Fields after the name start with the state, field 3; the start time
	// is field 22.
	f := bytes.Fields(stat[i+1:])
	if len(f) < 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(f[19]), 10, 64)
	return n, err == nil
}

// Stopped reports whether the process with the given id is stopped by a
// signal (SIGSTOP, SIGTSTP: state 'T' in /proc/PID/stat). A process
// stopped by a debugger that traces it (state 't') is not: it is being
// looked at, not gone.
func Stopped(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'T'
}
