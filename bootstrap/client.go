package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/bootstrap/pmix"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/auth"
)

// Client is a member of a job whose store is a Server, usually in another
// process. It implements core.Bootstrap. Collectives on one Client are
// serialized; Err and Close may be called from any goroutine.
type Client struct {
	conn net.Conn
	addr string
	rank int
	size int
	// storePE is the PE that hosts the store, named when the connection
	// to it breaks; -1 when the store is the launcher's.
	storePE int

	mu   sync.Mutex // one collective at a time; guards seq and wbuf
	seq  uint64
	wbuf []byte
	wmu  sync.Mutex // the collective's GATHER and Close's BYE

	replies    chan reply // filled by the reader, one per collective
	lost       atomic.Pointer[core.PeerLostError]
	lostCh     chan struct{} // closed when lost is first set
	lostOnce   sync.Once
	closing    chan struct{} // closed by Close
	closeOnce  sync.Once
	readerDone chan struct{}

	// Liveness: when a frame from the store was last read (Unix
	// nanoseconds), the dead-after the store announced (0: it does not
	// watch), and the goroutine that sends ALIVE and watches the store.
	heard          atomic.Int64
	storeDeadAfter atomic.Int64
	announced      chan struct{} // a store's dead-after changed: the period too
	aliveDone      chan struct{}

	reportMu sync.Mutex // guards reported and the Add of reports
	reported bool       // a loss was reported to the store, or Close began
	reports  sync.WaitGroup

	// pmix is the process's PMIx connection under a PMIx launcher, finalized
	// by Close; nil otherwise.
	pmix *pmix.Client

	// When this member hosts the store (rank 0 under srun or mpirun).
	server    *Server
	serveDone chan error
	linger    time.Duration
}

type reply struct {
	seq   uint64
	parts [][]byte
	err   error
}

// closeWait bounds how long Close waits for the store to acknowledge BYE.
const closeWait = 5 * time.Second

// DefaultTimeout is the connect timeout Dial and Connect use when given
// none.
const DefaultTimeout = 30 * time.Second

// Dial joins the job served by the store at addr as member rank of size,
// proving secret. It retries the connection until timeout, because the
// store may not be listening yet (under srun, PE 0 starts it); timeout <= 0
// means DefaultTimeout. A store that rejects this member, or a peer that
// is not a goshmem store, is not retried.
func Dial(addr string, rank, size int, secret []byte, timeout time.Duration) (*Client, error) {
	return dial(addr, rank, size, secret, timeout, -1)
}

// dial is Dial for a job whose store is hosted by PE storePE (-1: by the
// launcher).
func dial(addr string, rank, size int, secret []byte, timeout time.Duration, storePE int) (*Client, error) {
	if size < 1 || size > maxSize {
		return nil, fmt.Errorf("bootstrap: dial: job size %d: want 1..%d: %w", size, maxSize, core.ErrInvalid)
	}
	if rank < 0 || rank >= size {
		return nil, &core.PEError{PE: rank, NPEs: size}
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	var lastErr error
	var pause time.Duration
	for attempt := 0; ; attempt++ {
		conn, err := dialOnce(addr, deadline)
		if err == nil {
			err = clientHandshake(conn, addr, rank, size, secret, deadline)
			if err == nil {
				return newClient(conn, addr, rank, size, storePE), nil
			}
			conn.Close()
			var fatal *handshakeError
			if errors.As(err, &fatal) {
				return nil, err
			}
		}
		lastErr = err
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("bootstrap: no store answered at %s within %v (%d attempts; last: %v): %w",
				addr, timeout, attempt+1, lastErr, core.ErrTimeout)
		}
		pause = min(max(2*pause, 10*time.Millisecond), 250*time.Millisecond, left)
		time.Sleep(pause)
	}
}

func dialOnce(addr string, deadline time.Time) (net.Conn, error) {
	d := net.Dialer{Deadline: deadline, KeepAliveConfig: keepAlive}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	tuneConn(c)
	return c, nil
}

// handshakeError is a refusal that retrying cannot cure.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

func clientHandshake(c net.Conn, addr string, rank, size int, secret []byte, deadline time.Time) error {
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	nc, err := auth.NewNonce()
	if err != nil {
		return err
	}
	hb := encodeHello(hello{rank: uint32(rank), size: uint32(size), nonce: nc})
	if _, err := c.Write(hb); err != nil {
		return err
	}
	var hdr [headerLen]byte
	typ, p, err := readFrame(c, &hdr, handshakeLimit)
	if errors.Is(err, errWire) {
		return &handshakeError{fmt.Errorf("bootstrap: %s is not a goshmem store of this version: %w", addr, err)}
	}
	if err != nil {
		return err
	}
	if typ == frameReject {
		return rejected(addr, p)
	}
	if typ != frameChallenge {
		return &handshakeError{fmt.Errorf("bootstrap: %s is not a goshmem store: answered HELLO with %s", addr, frameName(typ))}
	}
	ch, err := decodeChallenge(p)
	if err != nil {
		return &handshakeError{fmt.Errorf("bootstrap: %s: %w", addr, err)}
	}
	proof, err := auth.Bootstrap.Answer(secret, hb[headerLen:], &ch)
	if err != nil {
		return &handshakeError{fmt.Errorf("bootstrap: the store at %s does not know this job's secret (is %s or %s from another job?): %w",
			addr, EnvBootstrap, EnvSecret, core.ErrInvalid)}
	}
	if _, err := c.Write(encodeProof(proof)); err != nil {
		return err
	}
	typ, p, err = readFrame(c, &hdr, handshakeLimit)
	if errors.Is(err, errWire) {
		return &handshakeError{fmt.Errorf("bootstrap: %s: %w", addr, err)}
	}
	if err != nil {
		return err
	}
	switch typ {
	case frameWelcome:
		if err := decodeEmpty(typ, p); err != nil {
			return &handshakeError{err}
		}
		return nil
	case frameReject:
		return rejected(addr, p)
	}
	return &handshakeError{fmt.Errorf("bootstrap: %s answered PROOF with %s", addr, frameName(typ))}
}

func rejected(addr string, p []byte) error {
	reason, err := decodeReject(p)
	if err != nil {
		return &handshakeError{fmt.Errorf("bootstrap: %s: %w", addr, err)}
	}
	return &handshakeError{fmt.Errorf("bootstrap: the store at %s refused this member: %s: %w", addr, reason, core.ErrInvalid)}
}

func newClient(conn net.Conn, addr string, rank, size, storePE int) *Client {
	c := &Client{
		conn:       conn,
		addr:       addr,
		rank:       rank,
		size:       size,
		storePE:    storePE,
		replies:    make(chan reply, 1),
		lostCh:     make(chan struct{}),
		closing:    make(chan struct{}),
		readerDone: make(chan struct{}),
		aliveDone:  make(chan struct{}),
		announced:  make(chan struct{}, 1),
	}
	c.heard.Store(time.Now().UnixNano())
	go c.readLoop()
	go c.aliveLoop()
	return c
}

// aliveLoop sends ALIVE to the store a few times within its dead-after
// (once a second while it announces none), so a store that watches its
// members tells this one from a stopped process; and it loses the store
// when one that announced a dead-after has sent nothing for as long. It
// ends with Close or the connection.
func (c *Client) aliveLoop() {
	defer close(c.aliveDone)
	alive := encodeAlive(0)
	for {
		d := time.Duration(c.storeDeadAfter.Load())
		every := time.Second
		if d > 0 {
			every = aliveEvery(d)
		}
		t := time.NewTimer(every)
		select {
		case <-t.C:
		case <-c.announced:
			t.Stop()
		case <-c.closing:
			t.Stop()
			return
		case <-c.readerDone:
			t.Stop()
			return
		}
		// A collective or a report writing now says as much; a write
		// that blocks is ended by Close's write deadline.
		if c.wmu.TryLock() {
			_, _ = c.conn.Write(alive)
			c.wmu.Unlock()
		}
		if d > 0 {
			if silent := time.Since(time.Unix(0, c.heard.Load())); silent >= d {
				c.storeLost(fmt.Errorf("it sent nothing for %v (its process is stopped or its host unreachable)",
					silent.Round(time.Millisecond)))
				c.conn.Close()
				return
			}
		}
	}
}

// Rank implements core.Bootstrap.
func (c *Client) Rank() int { return c.rank }

// Size implements core.Bootstrap.
func (c *Client) Size() int { return c.size }

// Err implements core.Bootstrap: one atomic load.
func (c *Client) Err() error {
	if e := c.lost.Load(); e != nil {
		return e
	}
	return nil
}

// Barrier implements core.Bootstrap.
func (c *Client) Barrier() error {
	_, err := c.Allgather(nil)
	return err
}

// maxContribution is the most one member may contribute and still fit a
// frame with its header.
const maxContribution = MaxFrame - gatherHeaderLen

// Allgather implements core.Bootstrap: one round trip to the store. The
// returned slices share one buffer; callers may keep them.
func (c *Client) Allgather(data []byte) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closing:
		return nil, fmt.Errorf("bootstrap: allgather after close: %w", core.ErrClosed)
	default:
	}
	if e := c.lost.Load(); e != nil {
		return nil, e
	}
	seq := c.seq
	c.seq++
	var flags byte
	if len(data) > maxContribution {
		// Too large to send, but the others must not wait forever: the
		// store fails this collective on every member.
		flags, data = gatherOversize, nil
	}
	c.wbuf = appendGather(c.wbuf[:0], seq, flags, data)
	c.wmu.Lock()
	_, err := c.conn.Write(c.wbuf)
	c.wmu.Unlock()
	if len(c.wbuf) > 64<<10 {
		c.wbuf = nil // do not pin a large buffer between collectives
	}
	if err != nil {
		select {
		case <-c.closing:
			return nil, fmt.Errorf("bootstrap: allgather interrupted by close: %w", core.ErrClosed)
		default:
		}
		return nil, c.storeLost(err)
	}

	var r reply
	select {
	case r = <-c.replies:
	case <-c.lostCh:
		// A reply that arrived before the loss was announced still
		// stands: the reader delivered it first.
		select {
		case r = <-c.replies:
		default:
			return nil, c.lost.Load()
		}
	case <-c.closing:
		return nil, fmt.Errorf("bootstrap: allgather interrupted by close: %w", core.ErrClosed)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.seq != seq {
		return nil, c.storeLost(wireErr("the store answered collective %d with the result of %d", seq, r.seq))
	}
	return r.parts, nil
}

// ReportLost implements core.LossReporter: the loss is this member's at
// once (Err, and every running and later collective, end with it), and
// the store, told in the background, fails the lost member for everyone,
// the launcher included. Only the first report goes to the store: the
// job is over after it.
func (c *Client) ReportLost(e *core.PeerLostError) {
	if e == nil || e.PE < 0 || e.PE >= c.size {
		return
	}
	c.setLost(&core.PeerLostError{PE: e.PE, Reason: e.Reason})
	c.reportMu.Lock()
	defer c.reportMu.Unlock()
	if c.reported {
		return
	}
	c.reported = true
	c.reports.Add(1)
	// Never on the caller's goroutine: a provider reports from its
	// failure path, which must not wait on a store that stopped reading.
	go func() {
		defer c.reports.Done()
		f := encodeLost(lost{pe: uint32(e.PE), reason: e.Reason})
		c.wmu.Lock()
		defer c.wmu.Unlock()
		select {
		case <-c.closing:
			// Close is sending BYE or has; the store takes this member
			// as finalized and the others' collectives fail anyway.
		default:
			// A write that blocks is ended by Close's write deadline.
			_, _ = c.conn.Write(f)
		}
	}()
}

// readLoop is the client's one goroutine: it reads every frame the store
// sends until the connection ends.
func (c *Client) readLoop() {
	defer close(c.readerDone)
	br := bufio.NewReader(c.conn)
	var hdr [headerLen]byte
	for {
		typ, p, err := readFrame(br, &hdr, MaxFrame)
		if err == nil {
			c.heard.Store(time.Now().UnixNano())
		}
		if err != nil {
			select {
			case <-c.closing:
				return // the store acknowledging BYE, or our own Close
			default:
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the store closed the connection")
			}
			c.storeLost(err)
			return
		}
		if err := c.handleFrame(typ, p); err != nil {
			c.storeLost(err)
			c.conn.Close()
			return
		}
	}
}

func (c *Client) handleFrame(typ byte, p []byte) error {
	var r reply
	switch typ {
	case frameResult:
		seq, parts, err := decodeResult(p, c.size)
		if err != nil {
			return err
		}
		r = reply{seq: seq, parts: parts}
	case frameFail:
		f, err := decodeFail(p, c.size)
		if err != nil {
			return err
		}
		r = reply{seq: f.seq, err: c.failErr(f)}
	case frameLost:
		l, err := decodeLost(p, c.size)
		if err != nil {
			return err
		}
		c.setLost(&core.PeerLostError{PE: int(l.pe), Reason: l.reason})
		return nil
	case frameAlive:
		d, err := decodeAlive(p)
		if err != nil {
			return err
		}
		if c.storeDeadAfter.Swap(int64(d)) != int64(d) {
			select {
			case c.announced <- struct{}{}:
			default:
			}
		}
		return nil
	default:
		return wireErr("unexpected %s frame from the store", frameName(typ))
	}
	select {
	case c.replies <- r:
		return nil
	default:
		return wireErr("the store sent a reply to collective %d that nobody awaits", r.seq)
	}
}

func (c *Client) failErr(f fail) error {
	switch f.kind {
	case failLost:
		e := &core.PeerLostError{PE: int(f.pe), Reason: f.reason}
		c.setLost(e)
		return c.lost.Load()
	case failFinalized:
		// As in Local: the collective can never complete, but the member
		// left cleanly, so Err stays nil.
		return &core.PeerLostError{PE: int(f.pe), Reason: f.reason}
	}
	return fmt.Errorf("bootstrap: allgather: %s: %w", f.reason, core.ErrInvalid)
}

func (c *Client) setLost(e *core.PeerLostError) {
	if c.lost.CompareAndSwap(nil, e) {
		c.lostOnce.Do(func() { close(c.lostCh) })
	}
}

// storeLost records that the connection to the store broke and returns the
// resulting error (the first loss recorded wins).
func (c *Client) storeLost(err error) error {
	what := "the launcher's bootstrap store"
	if c.storePE >= 0 {
		what = fmt.Sprintf("the bootstrap store hosted by PE %d", c.storePE)
	}
	c.setLost(&core.PeerLostError{PE: c.storePE,
		Reason: fmt.Sprintf("connection to %s at %s broke: %v", what, c.addr, err)})
	return c.lost.Load()
}

// Close implements core.Bootstrap: it tells the store this member
// finalized, waits briefly for the store to acknowledge, and closes the
// connection; the reader goroutine has ended when it returns. A member
// hosting the store keeps it running until every other member has left.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closing)
		c.reportMu.Lock()
		c.reported = true // no report starts from now on
		c.reportMu.Unlock()
		// Bounds the BYE and unblocks a collective stuck writing to a
		// store that stopped reading.
		c.conn.SetWriteDeadline(time.Now().Add(closeWait))
		c.wmu.Lock()
		_, werr := c.conn.Write(frame(frameBye))
		c.wmu.Unlock()
		// When the PE hosting the store is lost (a provider saw it go
		// before the store fell silent), nobody will acknowledge.
		l := c.lost.Load()
		hostLost := l != nil && c.storePE >= 0 && l.PE == c.storePE
		if werr == nil && !hostLost {
			// The store closes its end once it has recorded BYE. Waiting
			// for that, rather than closing at once, means nothing the
			// store sent is left unread, which would make the kernel
			// reset the connection and could lose the BYE.
			t := time.NewTimer(closeWait)
			select {
			case <-c.readerDone:
			case <-t.C:
			}
			t.Stop()
		} else if werr != nil && c.Err() == nil {
			err = fmt.Errorf("bootstrap: close: telling the store: %w", werr)
		}
		c.conn.Close()
		<-c.readerDone
		<-c.aliveDone
		c.reports.Wait()
		if c.server != nil {
			c.server.waitDrained(c.linger)
			err = errors.Join(err, c.server.Close(), <-c.serveDone)
		}
		if c.pmix != nil {
			// Last, after the store: the launcher may count a process
			// that finalized as done with the job.
			err = errors.Join(err, c.pmix.Finalize())
		}
	})
	return err
}

// abortWait bounds how long Abort waits for the launcher to end the job.
const abortWait = 5 * time.Second

// AbortJob implements core.JobAborter: under a PMIx launcher it asks the
// launcher (PMIx_Abort) to end every PE of the job, for it to exit with
// status and report reason; it returns once the launcher answered, or
// after a few seconds without an answer. Without PMIx it does nothing and
// returns false: the launcher sees the PE's exit.
func (c *Client) AbortJob(status int, reason string) bool {
	if c.pmix == nil {
		return false
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.pmix.Abort(status, reason)
	}()
	t := time.NewTimer(abortWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return true
}

var (
	_ core.Bootstrap    = (*Client)(nil)
	_ core.LossReporter = (*Client)(nil)
	_ core.JobAborter   = (*Client)(nil)
)
