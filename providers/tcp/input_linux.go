//go:build linux

package tcp

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
)

// inputSet is a level-triggered epoll instance of the domain's own that
// watches every connection's socket for reading, so that InputPending can
// tell, in one system call and without the runtime's poller, whether a
// frame waits for the reader goroutines. It is made at the first look,
// so that a job nobody asks pays no epoll callback on its sockets'
// segments.
type inputSet struct {
	once   sync.Once
	ep     int
	made   bool // ep is the instance
	ok     bool // made, and watching every connection's socket
	closed atomic.Bool
}

// build makes the instance and watches every connection's socket in it.
func (s *inputSet) build(conns []*conn) {
	ep, err := sys.EpollCreate()
	if err != nil {
		return
	}
	s.ep, s.made, s.ok = ep, true, true
	for _, c := range conns {
		if c == nil {
			continue
		}
		raw := c.rd.sock.raw
		if raw == nil {
			s.ok = false
			continue
		}
		if err := raw.Control(func(fd uintptr) {
			if sys.EpollWatch(ep, int(fd), false) != nil {
				s.ok = false
			}
		}); err != nil {
			s.ok = false
		}
	}
}

// close releases the instance, if made, and keeps it from being made
// after.
func (s *inputSet) close() {
	made := true
	s.once.Do(func() { made = false })
	if made && s.made && !s.closed.Swap(true) {
		_ = syscall.Close(s.ep)
	}
}

var _ core.InputPender = (*domain)(nil)

// InputPending implements core.InputPender: some connection's socket has
// data, its end or an error for the reader goroutines. Where the set
// could not be made or could not watch every socket, or is closed, it
// says yes. Only after Open has returned: the connections are fixed.
func (d *domain) InputPending() bool {
	s := &d.inputs
	s.once.Do(func() { s.build(d.conns) })
	return !s.ok || s.closed.Load() || sys.EpollReady(s.ep)
}
