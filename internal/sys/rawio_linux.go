//go:build linux

package sys

import (
	"syscall"
	"unsafe"
)

// The calls here are for descriptors that never block (O_NONBLOCK), which
// their callers poll: they are made as raw system calls, without the
// runtime's entersyscall and exitsyscall around them, so they neither
// wake the runtime's sysmon nor give up the runtime processor. Each error
// is the syscall.Errno itself, for the caller to tell EAGAIN and EINTR
// from failures.

// ReadNoWait is read(2) of fd into p.
func ReadNoWait(fd uintptr, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// WriteNoWait is write(2) of p to fd.
func WriteNoWait(fd uintptr, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// PeekNoWait looks at the socket fd without reading it (recvfrom(2) of
// one byte, MSG_PEEK|MSG_DONTWAIT): nil says that it has data or its end,
// EAGAIN that it has nothing yet.
func PeekNoWait(fd uintptr) error {
	var b [1]byte
	_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// WritevNoWait is writev(2) of iov to fd.
func WritevNoWait(fd int, iov []syscall.Iovec) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
