//go:build linux

package sys

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writev writes iov to fd with one writev(2), as the caller built it (so
// that a caller that reuses its vector allocates nothing). The error, if
// any, is the syscall.Errno itself, for the caller to tell EAGAIN and
// EINTR from failures.
func Writev(fd int, iov []syscall.Iovec) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	r, _, e := syscall.Syscall(syscall.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// WaitWritable blocks the calling thread in poll(2) until fd can take a
// write, fails, or timeout passes, and says whether it may be written (a
// failed socket says yes: the write that follows reports why). It is for
// callers whose goroutine is locked to its thread, for which parking in
// the runtime's poller costs two thread hand-offs: the runtime counts the
// call as a system call and lets other goroutines run meanwhile.
// Interrupted, it says no, and the caller looks again.
func WaitWritable(fd int, timeout time.Duration) (bool, error) {
	return waitFor(fd, unix.POLLOUT, timeout)
}

// WaitReadable is WaitWritable for reading: it blocks the calling thread
// in poll(2) until fd has data to read (or its end, or an error), or
// timeout passes, and says whether a read would not wait.
func WaitReadable(fd int, timeout time.Duration) (bool, error) {
	return waitFor(fd, unix.POLLIN, timeout)
}

// waitFor polls fd for events for up to timeout, at least a millisecond.
func waitFor(fd int, events int16, timeout time.Duration) (bool, error) {
	ms := int(timeout / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: events}}
	n, err := unix.Poll(fds[:], ms)
	switch {
	case err == unix.EINTR:
		return false, nil
	case err != nil:
		return false, os.NewSyscallError("poll", err)
	}
	return n > 0, nil
}
