//go:build linux

package sys

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MapPrivate maps size bytes of private anonymous memory, readable and
// writable and reading as zeros, at an address aligned to
// Alignment(size). Pages are backed on first touch. The
// caller owns the mapping and releases it with Unmap. Memory mapped here
// lives outside the Go heap: the garbage collector neither scans nor
// moves it, so other processes' data may be written into it by any
// goroutine, as into memory from CreateShared.
func MapPrivate(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("sys: map %d bytes: size is not positive", size)
	}
	b, err := mapAligned(-1, size, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return b, nil
}

// Revoke replaces the pages of a mapping b (from CreateShared,
// OpenShared or MapPrivate) with private anonymous memory, in place and
// at once: what it mapped is no longer reachable through b, and reads
// and writes through b that are still under way or come later see fresh
// zeroed pages instead of faulting. b stays a mapping, to be released
// with Unmap as before. It is how a host that dies in the middle of its
// own goroutines' accesses loses its view of shared memory without
// crashing the process they share.
func Revoke(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&b[0]), uintptr(len(b)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	return nil
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
