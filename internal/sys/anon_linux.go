//go:build linux

package sys

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MapPrivate maps size bytes of private anonymous memory, readable and
// writable and reading as zeros. Pages are backed on first touch. The
// caller owns the mapping and releases it with Unmap. Memory mapped here
// lives outside the Go heap: the garbage collector neither scans nor
// moves it, so other processes' data may be written into it by any
// goroutine, as into memory from CreateShared.
func MapPrivate(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("sys: map %d bytes: size is not positive", size)
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return b, nil
}

// SetTCPUserTimeout bounds how long data written to the TCP socket behind
// rc may stay unacknowledged before the kernel drops the connection
// (TCP_USER_TIMEOUT), so a vanished host is noticed even while data is
// queued for it, when keepalive probes are not sent.
func SetTCPUserTimeout(rc syscall.RawConn, d time.Duration) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d/time.Millisecond))
	})
	if err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt TCP_USER_TIMEOUT", serr)
}
