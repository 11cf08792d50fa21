//go:build linux

package sys

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// WaitWritable blocks the calling thread in poll(2) until fd can take a
// write, fails, or timeout passes, and says whether it may be written (a
// failed socket says yes: the write that follows reports why). It is for
// callers whose goroutine is locked to its thread, for which parking in
// the runtime's poller costs two thread hand-offs: the runtime counts the
// call as a system call and lets other goroutines run meanwhile.
// Interrupted, it says no, and the caller looks again.
func WaitWritable(fd int, timeout time.Duration) (bool, error) {
	ms := int(timeout / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(fds[:], ms)
	switch {
	case err == unix.EINTR:
		return false, nil
	case err != nil:
		return false, os.NewSyscallError("poll", err)
	}
	return n > 0, nil
}
