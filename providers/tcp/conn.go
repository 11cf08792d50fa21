package tcp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/providers/provkit"
)

// conn is this PE's one connection to one peer, composed of parts with one
// job and at most one lock each:
//
//   - q, the send queue (sendq.go): issuers and the reader queue encoded
//     frames there, and its ledger numbers the operations the peer's acks
//     complete.
//   - w, the writer (writer.go): one writer at a time, the writer
//     goroutine or an issuer that cannot wait for it, takes the queue and
//     writes it in one system call.
//   - reqs, the request table (request.go): this PE's requests waiting
//     for the peer's replies.
//   - rd, the receive token and what its holder alone uses (token.go):
//     the buffered socket and rx, the state machine of what the peer's
//     frames do (rx.go), which knows nothing of sockets.
//
// Locks nest only as rd's token, then w's lock, then q's; q's and reqs'
// are leaves, held only inside their own methods. conn's methods are the
// glue: they move frames between the parts and the socket, and end the
// connection. See doc.go.
type conn struct {
	d    *domain
	peer int
	nc   net.Conn

	q    sendQueue
	w    writer
	reqs requestTable
	rd   reader
	aw   ackWait // a locked quiet's wait after a large put (ackwait.go)
	hold ackHold // the peer's acks set aside (domain.HoldAcks)

	stopOnce   sync.Once
	closeOnce  sync.Once
	failed     atomic.Pointer[core.PeerLostError]
	dead       chan struct{} // closed with the socket
	readerDone chan struct{}
	writerDone chan struct{}
}

// reader is the receive token and what only its holder uses: the
// buffered socket, the protocol's receiving state, and the count of
// frames the holder queued and has not written (token.go, progress.go).
type reader struct {
	tok  sync.Mutex
	in   frameReader // the buffered socket, large payloads read past the buffer
	sock sockReader
	hb   [maxHdrLen]byte
	rx   rxState
	out  rxOut
	end  bool // the stream ended: the connection is stopped or failed
	// lazy says that the holder, the reader goroutine, parks next: once
	// it applied a frame it stops at a boundary without reading the
	// socket, which its park looks at anyway (token.go).
	lazy bool
	// assistUsual is how long an issuer's poll, holding the token,
	// usually waits for its reply or acknowledgement (learn).
	assistUsual int64

	dirty   bool // frames were queued that have not been flushed
	frames  uint64
	flushed uint64 // frames when the holder last flushed
}

// newConn makes the connection to peer over nc, taking its socket out of
// the runtime's poller where the SOCKET setting says so (sock), and
// starts its reader and writer goroutines.
func newConn(d *domain, peer int, nc net.Conn) *conn {
	tune(d, nc)
	if d.set.ownSocket {
		own, err := ownSocket(nc)
		if err != nil {
			d.log.Debug("tcp: the socket stays in the runtime's poller", "peer", peer, "err", err)
		}
		nc = own
	}
	c := makeConn(d, peer, nc)
	go c.readLoop()
	go c.writeLoop()
	return c
}

// makeConn makes the connection to peer over nc, with no goroutine.
func makeConn(d *domain, peer int, nc net.Conn) *conn {
	c := &conn{d: d, peer: peer, nc: nc, dead: make(chan struct{}),
		readerDone: make(chan struct{}), writerDone: make(chan struct{})}
	c.q.kick, c.q.buffer, c.q.out = make(chan struct{}, 1), d.set.buffer, make([]byte, 0, 64<<10)
	c.q.urge = make(chan struct{}, 1)
	c.w.nc, c.w.spare = nc, make([]byte, 0, 64<<10)
	c.reqs.peer = peer
	c.rd.rx = rxState{d: d, reqs: &c.reqs, peer: peer}
	c.rd.sock.nc = nc
	// The reader starts polling for the whole POLL setting, the state a
	// latency-bound caller needs, and adapts from there (poll.go): a
	// budget of zero would park it after every frame until a sleep that a
	// frame soon ended grew it again.
	c.rd.sock.budget = int64(d.set.poll)
	c.rd.in = frameReader{Reader: bufio.NewReaderSize(&c.rd.sock, readBufSize), sock: &c.rd.sock}
	if raw := rawConn(nc); raw != nil {
		c.w.raw, c.w.rawWrite, c.w.rawAll = raw, c.w.writeRaw, c.w.writeAll
		c.w.rawVecNoWait = vecNoWaitWriter(&c.w)
		if d.lockedCallers {
			c.w.issuerPolls, c.w.rawPoll = true, pollWriter(&c.w)
			c.aw.pollIn = c.aw.wait
		}
		s := &c.rd.sock
		s.raw, s.rawRead, s.peek, s.waitRead = raw, s.readRaw, s.peekRaw, s.readWaiting
		if own, ok := nc.(*sock); ok {
			c.w.rawVec = vecWriter(&c.w)
			s.settle = own.settleRead
		}
	}
	return c
}

// tune sets what makes a connection fast and its loss noticed: no Nagle;
// keepalive probes after half the TIMEOUT setting of silence, and a user
// timeout that drops the connection once the peer has acknowledged
// nothing, data or probe, for TIMEOUT (on Linux it overrides the probe
// count), so a silent host is lost after about TIMEOUT whether or not
// data is waiting for it; and the socket buffers if set. Failures only
// make loss detection slower, so they are not fatal.
func tune(d *domain, nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	t := d.set.timeout
	_ = tc.SetNoDelay(true)
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: max(t/2, time.Second),
		Interval: max(t/10, time.Second), Count: 3})
	if rc, err := tc.SyscallConn(); err == nil {
		_ = sys.SetTCPUserTimeout(rc, t)
	}
	if n := d.set.sockBuf; n > 0 {
		_ = tc.SetReadBuffer(n)
		_ = tc.SetWriteBuffer(n)
	}
}

// err is the error of an operation on a connection that has failed or is
// closing, nil while it works.
func (c *conn) err() error {
	if e := c.failed.Load(); e != nil {
		return e
	}
	return nil
}

// fail ends the connection: stop, then the socket is closed and the
// writer stops.
func (c *conn) fail(reason string) {
	c.stop(reason)
	c.closeOnce.Do(func() {
		close(c.dead)
		_ = c.nc.Close()
	})
}

// stop ends the connection's use, once: every outstanding request and
// unacknowledged operation fails with a *core.PeerLostError giving reason,
// and so does every later operation. The socket stays open, so that
// after the peer's clean close this PE's own BYE can still go out.
func (c *conn) stop(reason string) {
	c.stopOnce.Do(func() {
		lost := &core.PeerLostError{PE: c.peer, Reason: reason}
		c.failed.Store(lost)
		// Both refuse new work before anything is ended, so that an
		// issuer woken by an ending finds the connection failed.
		pending := c.q.fail(lost)
		for _, r := range c.reqs.fail(lost) {
			c.reqs.finish(r, lost)
		}
		for _, b := range pending {
			b.ep.fail(provkit.Err(Name, "put", c.peer, lost), b.seq, b.n)
		}
	})
}

// lostReason words why a connection broke.
func lostReason(d *domain, err error) string {
	if d.closing.Load() {
		return "connection ended while the domain closes: " + err.Error()
	}
	if errors.Is(err, io.EOF) {
		return "its connection closed without a clean close (the process died?)"
	}
	return "connection broken: " + err.Error()
}

// newRequest registers a request on the connection (requestTable.add).
func (c *conn) newRequest(dst []byte, ep *endpoint, nbi bool) (*request, error) {
	return c.reqs.add(dst, ep, nbi)
}

// take removes the request with id from the connection's table.
func (c *conn) take(id uint64) *request { return c.reqs.take(id) }

// release returns a spent request to the connection's pool.
func (c *conn) release(r *request) { c.reqs.release(r) }
