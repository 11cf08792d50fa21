package tcp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
)

// conn is this PE's one connection to one peer. Issuing goroutines queue
// frames into out; one writer goroutine (or an issuer that cannot wait for
// it) writes whatever is queued in one system call; one reader goroutine,
// the connection's progress, applies the peer's frames to this PE's memory
// and completes this PE's requests. See doc.go.
type conn struct {
	d    *domain
	peer int
	nc   net.Conn
	// rtok is the receive token: its holder, the reader goroutine or an
	// issuer waiting for a reply (token.go), reads and applies the
	// peer's frames, and alone uses br, rd, hb and the reader's state.
	rtok sync.Mutex
	br   *bufio.Reader
	rd   sockReader
	hb   [maxHdrLen]byte
	rend bool // the stream ended: the connection is stopped or failed

	// The send queue, guarded by bmu. out holds encoded frames; refs are
	// payloads written from where they lie (large puts, large replies),
	// each after out[:at]. enq counts enqueues: a large put waits until
	// written reaches its ticket. sent counts the non-fetching operations
	// queued, which the peer's acks count off; batches says whose counters
	// they complete.
	bmu      sync.Mutex
	out      []byte
	refs     []segment
	kicked   bool  // the writer was kicked and has not found the queue empty since
	lastSend int64 // nanotime of the last send
	bye      bool  // opBye is queued: nothing more may be
	enq      uint64
	sent     uint64
	acked    uint64
	batches  []batch
	bhead    int

	kick chan struct{}

	// wmu is held by whoever writes to nc: the writer goroutine or an
	// issuer flushing itself. It is taken before bmu.
	wmu       sync.Mutex
	spare     []byte
	spareRefs []segment
	iov       [][]byte
	bufs      net.Buffers
	written   atomic.Uint64 // enq value of the last frame written

	// Outstanding requests by slot; rmu guards them and the pool.
	rmu  sync.Mutex
	reqs []*request
	free []uint32
	pool []*request
	gen  uint32

	// The reader's state, the token holder's.
	applied uint64 // non-fetching operations of the peer applied here
	ackSent uint64
	byeSeen bool
	dirty   bool // the reader queued frames it has not flushed
	frames  uint64
	flushed uint64 // frames when the reader last flushed

	// The reader's writes that never block (readerFlush): the socket, and
	// the buffer and result of the write under way, with a method value
	// made once so that a write allocates nothing.
	raw      syscall.RawConn // nil where nc is not a socket
	rawWrite func(fd uintptr) bool
	rbuf     []byte
	rn       int
	rerr     error

	stopOnce   sync.Once
	closeOnce  sync.Once
	failed     atomic.Pointer[core.PeerLostError]
	dead       chan struct{} // closed with the socket
	readerDone chan struct{}
	writerDone chan struct{}
}

type segment struct {
	at  int
	ref []byte
}

// batch is a run of non-fetching operations queued by one endpoint: the
// ones numbered up to end, n of them still unacknowledged, which are
// numbered seq to seq+n-1 on the endpoint's counter.
type batch struct {
	ep  *endpoint
	end uint64
	n   uint64
	seq uint64
}

// request is an operation that waits for a reply: its payload is read
// straight into dst.
type request struct {
	id  uint64
	dst []byte
	val [8]byte
	ch  chan struct{} // blocking requests: signalled once, when done
	err error
	ep  *endpoint // non-blocking requests: completed there
	seq uint64    // non-blocking requests: the number on ep's counter
	nbi bool
}

func newConn(d *domain, peer int, nc net.Conn) *conn {
	c := &conn{d: d, peer: peer, nc: nc,
		out: make([]byte, 0, 64<<10), spare: make([]byte, 0, 64<<10),
		kick: make(chan struct{}, 1), dead: make(chan struct{}),
		readerDone: make(chan struct{}), writerDone: make(chan struct{})}
	c.rd.c = c
	c.br = bufio.NewReaderSize(&c.rd, 256<<10)
	c.tune()
	if raw := rawConn(nc); raw != nil {
		c.raw, c.rawWrite, c.rd.rawRead, c.rd.peek = raw, c.writeRaw, c.rd.readRaw, c.rd.peekRaw
	}
	go c.readLoop()
	go c.writeLoop()
	return c
}

// tune sets what makes a connection fast and its loss noticed: no Nagle;
// keepalive probes after half the TIMEOUT setting of silence, and a user
// timeout that drops the connection once the peer has acknowledged
// nothing, data or probe, for TIMEOUT (on Linux it overrides the probe
// count), so a silent host is lost after about TIMEOUT whether or not
// data is waiting for it; and the socket buffers if set. Failures only
// make loss detection slower, so they are not fatal.
func (c *conn) tune() {
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		return
	}
	t := c.d.set.timeout
	_ = tc.SetNoDelay(true)
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: max(t/2, time.Second),
		Interval: max(t/10, time.Second), Count: 3})
	if rc, err := tc.SyscallConn(); err == nil {
		_ = sys.SetTCPUserTimeout(rc, t)
	}
	if n := c.d.set.sockBuf; n > 0 {
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

		c.rmu.Lock()
		var ended []*request
		for i, r := range c.reqs {
			if r != nil {
				ended = append(ended, r)
				c.reqs[i] = nil
			}
		}
		c.rmu.Unlock()
		for _, r := range ended {
			c.finish(r, lost)
		}

		c.bmu.Lock()
		pending := c.batches[c.bhead:]
		c.batches, c.bhead = nil, 0
		c.bmu.Unlock()
		for _, b := range pending {
			b.ep.fail(&core.OpError{Op: "put", PE: c.peer, Provider: Name, Err: lost}, b.seq, b.n)
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
