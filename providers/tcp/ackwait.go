package tcp

import (
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// A locked caller's quiet after a large put (the domain's callers are
// goroutines locked to their threads, a C program's). The put's
// acknowledgement comes only once the target has read the whole payload,
// hundreds of microseconds after the write, so the quiet's look at the
// socket (serveOnce) finds nothing and it sleeps. For a locked goroutine
// that sleep and its wake-up are two thread hand-offs: the runtime
// processor goes to another thread to run the reader goroutine, which
// reads the acknowledgement and hands it back. A Go program's goroutine
// parks on a thread that goes on to wait in the runtime's poller and
// reads the acknowledgement itself. So such a quiet holds the receive
// token and waits for the socket in poll(2) on its own thread, one
// wake-up, bounded by ackWaitMax, and applies what comes as the reader
// goroutine would. Small puts keep the look without waiting: a thread
// blocked in a system call keeps its runtime processor from the process's
// other goroutines until the runtime takes it back, which costs more than
// a small put's round trip saves.

// ackWaitMax bounds a locked quiet's wait in poll(2) for a large put's
// acknowledgement; after it the quiet sleeps as any other.
const ackWaitMax = 10 * time.Millisecond

// ackWait is a connection's state for that wait.
type ackWait struct {
	// large says that a locked issuer wrote a large put on the
	// connection since a quiet last waited on it. A quiet that finds
	// its work done before it leaves the flag to the next, whose wait
	// ends as soon as its own work is done.
	large atomic.Bool
	// The poll under way, with a method value made once so that a wait
	// allocates nothing: nil where the domain's callers are not locked
	// or the connection is not a socket.
	pollIn  func(fd uintptr)
	timeout time.Duration
	err     error
}

// wait is pollIn: it blocks in poll(2) until fd is readable or a.timeout
// passes.
func (a *ackWait) wait(fd uintptr) { _, a.err = sys.WaitReadable(int(fd), a.timeout) }

// noteLarge records a put of n bytes written by a locked issuer: from
// largePut bytes on (putalign.go), its quiet waits in poll(2).
func (c *conn) noteLarge(n int) {
	if n >= largePut && c.aw.pollIn != nil {
		c.aw.large.Store(true)
	}
}

// awaitLarge is a locked quiet's wait on c until done after a large put
// (see above): when the token is free it applies what the socket holds
// and waits for more in poll(2), for ackWaitMax at most. It returns at
// once where no large put was written since the last quiet.
func (c *conn) awaitLarge(done func() bool) {
	if !c.aw.large.Swap(false) || c.rd.sock.raw == nil || !c.rd.tok.TryLock() {
		return
	}
	defer c.rd.tok.Unlock()
	until := nanotime() + int64(ackWaitMax)
	for !c.rd.end {
		c.serve(done)
		if c.rd.end || done() {
			return
		}
		left := until - nanotime()
		if left <= 0 {
			return
		}
		c.aw.timeout, c.aw.err = time.Duration(left), nil
		if err := c.rd.sock.raw.Control(c.aw.pollIn); err != nil || c.aw.err != nil {
			c.aw.err = nil
			return
		}
	}
}
