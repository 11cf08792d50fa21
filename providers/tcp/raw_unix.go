//go:build unix

package tcp

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawConn is the socket under nc, for reads and writes that never
// block, or nil.
func rawConn(nc net.Conn) syscall.RawConn {
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			return raw
		}
	}
	return nil
}

// writeRaw writes w.rbuf[w.rn:] to the socket without waiting: it stops
// at the first EAGAIN. It is a method value made once, so the reader's
// writes allocate nothing.
func (w *writer) writeRaw(fd uintptr) bool {
	for w.rn < len(w.rbuf) {
		n, err := syscall.Write(int(fd), w.rbuf[w.rn:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true
		case err != nil:
			w.rerr = os.NewSyscallError("write", err)
			return true
		}
		w.rn += n
	}
	return true
}

// readRaw reads once into s.buf without waiting: a socket found empty
// leaves s.n 0 and s.err nil. It is a method value made once, so that
// reads allocate nothing.
func (s *sockReader) readRaw(fd uintptr) {
	for {
		n, err := syscall.Read(int(fd), s.buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			// Empty: s.n stays 0.
		case err != nil:
			s.err = os.NewSyscallError("read", err)
		case n == 0 && len(s.buf) > 0:
			s.err = io.EOF
		default:
			s.n = n
		}
		return
	}
}

// peekRaw is the reader goroutine's condition for waking (park). Called
// first, once the runtime's poller is armed, it says whether the socket
// has something to read (data, its end or an error) without reading it;
// called again, after the poller saw the socket readable, it says yes
// without a look: a wake-up that finds nothing costs one empty read.
func (s *sockReader) peekRaw(fd uintptr) bool {
	if s.looked {
		return true
	}
	s.looked = true
	var b [1]byte
	for {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == syscall.EINTR {
			continue
		}
		return err != syscall.EAGAIN
	}
}
