//go:build unix

package tcp

import (
	"net"
	"os"
	"syscall"
)

// rawConn is the socket under nc, for writes that never block, or nil.
func rawConn(nc net.Conn) syscall.RawConn {
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			return raw
		}
	}
	return nil
}

// writeRaw writes c.rbuf[c.rn:] to the socket without waiting: it stops
// at the first EAGAIN. It is a method value made once, so the reader's
// writes allocate nothing.
func (c *conn) writeRaw(fd uintptr) bool {
	for c.rn < len(c.rbuf) {
		n, err := syscall.Write(int(fd), c.rbuf[c.rn:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true
		case err != nil:
			c.rerr = os.NewSyscallError("write", err)
			return true
		}
		c.rn += n
	}
	return true
}
