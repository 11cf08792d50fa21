package sys

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TCPUserTimeout reads the TCP_USER_TIMEOUT of the socket behind rc (see
// SetTCPUserTimeout); 0 means the kernel's default.
func TCPUserTimeout(rc syscall.RawConn) (time.Duration, error) {
	var (
		ms   int
		serr error
	)
	err := rc.Control(func(fd uintptr) {
		ms, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	})
	if err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, os.NewSyscallError("getsockopt TCP_USER_TIMEOUT", serr)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
