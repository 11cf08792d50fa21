//go:build !linux

package tcp

import (
	"errors"
	"net"
)

// sock is a socket outside the runtime's poller: on Linux only, where
// epoll makes it (sock_linux.go). Elsewhere none is ever made.
type sock struct{ net.Conn }

// ownSocket keeps nc: elsewhere sockets stay the net package's.
func ownSocket(nc net.Conn) (net.Conn, error) {
	return nc, errors.New("a socket outside the runtime's poller needs Linux")
}

// settleRead is never called: no sock is made here.
func (s *sock) settleRead() {}
