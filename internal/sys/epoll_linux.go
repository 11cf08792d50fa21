//go:build linux

package sys

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calls a socket kept outside the runtime's poller needs (the tcp
// provider's): a descriptor of its own, and an epoll instance of its own
// that watches it only while somebody waits, so that no epoll callback
// runs on the socket's every segment while its readers poll it. The
// instance itself is non-blocking, for the runtime's poller to watch (an
// os.File made of it is pollable). Each error names the call.

// DupCloexec returns a new descriptor of fd's open file, closed on exec.
func DupCloexec(fd int) (int, error) {
	n, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	return n, nil
}

// EpollCreate makes an epoll instance, non-blocking and closed on exec.
func EpollCreate() (int, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return -1, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return -1, os.NewSyscallError("fcntl O_NONBLOCK", err)
	}
	return fd, nil
}

// EpollWatch adds fd to the epoll instance epfd, level-triggered, for
// reading (with the peer's half-close) or, if out, for writing. Errors
// and hang-ups are always reported.
func EpollWatch(epfd, fd int, out bool) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if out {
		ev.Events = unix.EPOLLOUT
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl add", err)
	}
	return nil
}

// EpollUnwatch removes fd from the epoll instance epfd.
func EpollUnwatch(epfd, fd int) error {
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return os.NewSyscallError("epoll_ctl del", err)
	}
	return nil
}

// EpollReady reports whether the epoll instance epfd has a descriptor
// ready, without waiting (epoll_pwait with a timeout of 0). It is a raw
// system call, without the runtime's entersyscall and exitsyscall, for
// waiters that look between yields (see rawio_linux.go); an error says
// ready, so that such a waiter stops yielding.
func EpollReady(epfd int) bool {
	var ev [1]unix.EpollEvent
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&ev[0])), 1, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		return e != 0 || n > 0
	}
}
