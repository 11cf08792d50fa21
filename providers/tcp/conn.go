package tcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
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
	br   *bufio.Reader // the reader goroutine's alone

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
	written   atomic.Uint64 // enq value of the last frame written

	// Outstanding requests by slot; rmu guards them and the pool.
	rmu  sync.Mutex
	reqs []*request
	free []uint32
	pool []*request
	gen  uint32

	// The reader's own state.
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

	failOnce   sync.Once
	failed     atomic.Pointer[core.PeerLostError]
	dead       chan struct{} // closed by fail
	readerDone chan struct{}
	writerDone chan struct{}
}

type segment struct {
	at  int
	ref []byte
}

// batch is a run of non-fetching operations queued by one endpoint: the
// ones numbered up to end, n of them still unacknowledged.
type batch struct {
	ep  *endpoint
	end uint64
	n   uint64
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
	nbi bool
}

// burstGap is the time between two puts under which the second is part of
// a burst, left to the writer to combine.
const burstGap = int64(2 * time.Microsecond)

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }

var epoch = time.Now()

// ackEvery bounds how many operations the reader applies before it acks
// even while more frames are waiting.
const ackEvery = 1024

// smallReply is the largest reply copied into the queue; larger ones are
// written from the heap.
const smallReply = injectSize

func newConn(d *domain, peer int, nc net.Conn) *conn {
	c := &conn{d: d, peer: peer, nc: nc, br: bufio.NewReaderSize(nc, 256<<10),
		out: make([]byte, 0, 64<<10), spare: make([]byte, 0, 64<<10),
		kick: make(chan struct{}, 1), dead: make(chan struct{}),
		readerDone: make(chan struct{}), writerDone: make(chan struct{})}
	c.tune()
	if raw := rawConn(nc); raw != nil {
		c.raw, c.rawWrite = raw, c.writeRaw
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

// lockSend takes bmu for an issuer, or returns why nothing may be queued.
func (c *conn) lockSend() error {
	c.bmu.Lock()
	if c.bye {
		c.bmu.Unlock()
		return core.ErrClosed
	}
	if e := c.failed.Load(); e != nil {
		c.bmu.Unlock()
		return e
	}
	return nil
}

// kickLocked wakes the writer unless it is already awake; bmu is held.
func (c *conn) kickLocked() {
	if !c.kicked {
		c.kicked = true
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// countLocked numbers a queued non-fetching operation of ep.
func (c *conn) countLocked(ep *endpoint) {
	c.sent++
	if n := len(c.batches); n > c.bhead && c.batches[n-1].ep == ep {
		b := &c.batches[n-1]
		b.end, b.n = c.sent, b.n+1
		return
	}
	c.batches = append(c.batches, batch{ep: ep, end: c.sent, n: 1})
}

// send queues a non-fetching operation of ep: a header and,
// for puts up to injectSize, the payload copied. It returns when src may
// be reused: at once for a copied payload, after the write for one sent
// from where it lies.
func (c *conn) send(ep *endpoint, h *header, payload []byte) error {
	if err := c.lockSend(); err != nil {
		return err
	}
	c.out = appendHeader(c.out, h)
	byRef := len(payload) > injectSize
	if byRef {
		c.refs = append(c.refs, segment{at: len(c.out), ref: payload})
	} else {
		c.out = append(c.out, payload...)
	}
	c.countLocked(ep)
	c.enq++
	ticket := c.enq
	full := len(c.out) >= c.d.set.buffer
	now := nanotime()
	// A put that follows the last by more than burstGap while the writer
	// sleeps starts no burst: write it now, saving the writer's wake-up.
	// Within a burst, the writer combines.
	alone := !c.kicked && now-c.lastSend > burstGap
	c.lastSend = now
	if !alone {
		c.kickLocked()
	}
	c.bmu.Unlock()
	switch {
	case byRef || full:
		// Write it ourselves: we would wait for the writer anyway.
		c.flush()
	case alone:
		if c.wmu.TryLock() {
			c.flushLocked()
			c.wmu.Unlock()
		} else {
			c.wakeWriter()
		}
	}
	if byRef && c.written.Load() < ticket {
		return c.err()
	}
	return nil
}

// request queues a request whose reply fills r.
func (c *conn) request(h *header, r *request) error {
	if err := c.lockSend(); err != nil {
		return err
	}
	h.id = r.id
	c.out = appendHeader(c.out, h)
	c.enq++
	c.bmu.Unlock()
	// The caller waits for the reply anyway: write it from here, without
	// waking the writer.
	c.flush()
	return nil
}

// flushNow writes the queue from this goroutine, unless somebody is
// writing already (who will write it). Issuers about to wait for a reply
// call it to save the writer's wake-up.
func (c *conn) flushNow() {
	if c.wmu.TryLock() {
		c.flushLocked()
		c.wmu.Unlock()
	}
}

// flush writes everything queued before it was called.
func (c *conn) flush() {
	c.wmu.Lock()
	c.flushLocked()
	c.wmu.Unlock()
}

func (c *conn) flushLocked() {
	for {
		c.bmu.Lock()
		if len(c.out) == 0 && len(c.refs) == 0 {
			c.kicked = false
			c.bmu.Unlock()
			return
		}
		buf, refs, end, bye := c.out, c.refs, c.enq, c.bye
		c.out, c.refs = c.spare[:0], c.spareRefs[:0]
		c.bmu.Unlock()
		err := c.write(buf, refs)
		clear(refs) // drop the references to callers' buffers
		c.spare, c.spareRefs = buf[:0], refs[:0]
		if err != nil {
			c.fail(lostReason(c.d, err))
			return
		}
		c.written.Store(end)
		if bye {
			if tc, ok := c.nc.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
		}
	}
}

func (c *conn) write(buf []byte, refs []segment) error {
	if len(refs) == 0 {
		_, err := c.nc.Write(buf)
		return err
	}
	c.iov = c.iov[:0]
	prev := 0
	for _, s := range refs {
		if s.at > prev {
			c.iov = append(c.iov, buf[prev:s.at])
		}
		c.iov = append(c.iov, s.ref)
		prev = s.at
	}
	if prev < len(buf) {
		c.iov = append(c.iov, buf[prev:])
	}
	bufs := net.Buffers(c.iov)
	_, err := bufs.WriteTo(c.nc)
	clear(c.iov)
	return err
}

// writeLoop is the connection's writer: woken by a kick, it writes what is
// queued, optionally lingering FLUSH_IDLE for more first.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	for {
		select {
		case <-c.kick:
		case <-c.dead:
			return
		}
		if idle := c.d.set.flushIdle; idle > 0 {
			c.linger(idle)
		}
		c.flush()
		c.bmu.Lock()
		done := c.bye && len(c.out) == 0 && len(c.refs) == 0
		c.bmu.Unlock()
		if done {
			return
		}
	}
}

// linger yields the CPU for up to d while less than half a buffer is
// queued, so more small operations join the next write.
func (c *conn) linger(d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		c.bmu.Lock()
		enough := len(c.out) >= c.d.set.buffer/2 || len(c.refs) > 0 || c.bye
		c.bmu.Unlock()
		if enough {
			return
		}
		runtime.Gosched()
	}
}

// queue appends a frame of the reader's (ack or reply), the payload
// copied, or with ref sent from where it lies. The reader writes it, or
// wakes the writer, before it next waits for the socket (see read).
func (c *conn) queue(h *header, payload, ref []byte) {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.bye || c.failed.Load() != nil {
		return
	}
	c.out = appendHeader(c.out, h)
	c.out = append(c.out, payload...)
	if ref != nil {
		c.refs = append(c.refs, segment{at: len(c.out), ref: ref})
	}
	c.enq++
	c.dirty = true
}

// readerFlush writes what the reader queued without ever blocking: the
// reader must keep reading whatever the peer does, or two PEs writing to
// each other could each wait for the other to read. It writes what the
// socket takes at once, puts the rest back at the head of the queue and
// leaves it, like a queue it cannot write now (somebody is writing, or
// there are payloads by reference), to the writer.
func (c *conn) readerFlush() {
	c.dirty = false
	if c.raw == nil || !c.wmu.TryLock() {
		c.wakeWriter()
		return
	}
	defer c.wmu.Unlock()
	c.bmu.Lock()
	if len(c.refs) > 0 || len(c.out) == 0 {
		if len(c.refs) > 0 {
			c.kickLocked()
		}
		c.bmu.Unlock()
		return
	}
	buf, end := c.out, c.enq
	c.out = c.spare[:0]
	c.bmu.Unlock()
	c.rbuf, c.rn, c.rerr = buf, 0, nil
	if err := c.raw.Write(c.rawWrite); err != nil && c.rerr == nil {
		c.rerr = err
	}
	n, err := c.rn, c.rerr
	c.rbuf = nil
	if err != nil {
		c.fail(lostReason(c.d, err))
		return
	}
	if n == len(buf) {
		c.spare = buf[:0]
		c.written.Store(end)
		return
	}
	// Put the rest back in front of what was queued meanwhile.
	c.bmu.Lock()
	rest := len(buf) - n
	out := append(append(make([]byte, 0, rest+len(c.out)), buf[n:]...), c.out...)
	for i := range c.refs {
		c.refs[i].at += rest
	}
	c.spare, c.out = c.out[:0], out
	c.kickLocked()
	c.bmu.Unlock()
}

// wakeWriter wakes the writer.
func (c *conn) wakeWriter() {
	c.bmu.Lock()
	c.kickLocked()
	c.bmu.Unlock()
}

// sendBye queues the last frame of a clean close.
func (c *conn) sendBye() {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.bye || c.failed.Load() != nil {
		return
	}
	c.out = appendHeader(c.out, &header{op: opBye})
	c.bye = true
	c.enq++
	c.kickLocked()
}

// newRequest registers a request for a reply of len(dst) bytes (or, with
// dst nil, of a value into r.val). After it succeeds, the request ends
// exactly once: by its reply or by the connection's failure.
func (c *conn) newRequest(dst []byte, ep *endpoint, nbi bool) (*request, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if e := c.failed.Load(); e != nil {
		return nil, e
	}
	var r *request
	if n := len(c.pool); n > 0 {
		r, c.pool = c.pool[n-1], c.pool[:n-1]
	} else {
		r = &request{ch: make(chan struct{}, 1)}
	}
	var slot uint32
	if n := len(c.free); n > 0 {
		slot, c.free = c.free[n-1], c.free[:n-1]
	} else {
		slot = uint32(len(c.reqs))
		c.reqs = append(c.reqs, nil)
	}
	c.gen++
	r.id = uint64(c.gen)<<32 | uint64(slot)
	r.dst, r.ep, r.nbi, r.err = dst, ep, nbi, nil
	if dst == nil {
		r.dst = r.val[:]
	}
	c.reqs[slot] = r
	return r, nil
}

// take removes the request with id from the table.
func (c *conn) take(id uint64) *request {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	slot := uint32(id)
	if int(slot) >= len(c.reqs) || c.reqs[slot] == nil || c.reqs[slot].id != id {
		return nil
	}
	r := c.reqs[slot]
	c.reqs[slot] = nil
	c.free = append(c.free, slot)
	return r
}

// finish ends a request taken from the table.
func (c *conn) finish(r *request, err error) {
	if !r.nbi {
		r.err = err
		r.ch <- struct{}{}
		return
	}
	if err != nil {
		r.ep.fail(&core.OpError{Op: "get-nbi", PE: c.peer, Provider: Name, Err: err}, 1)
	} else {
		r.ep.complete(1)
	}
	c.release(r)
}

func (c *conn) release(r *request) {
	r.dst, r.ep, r.err = nil, nil, nil
	c.rmu.Lock()
	c.pool = append(c.pool, r)
	c.rmu.Unlock()
}

// fail ends the connection once: every outstanding request and
// unacknowledged operation fails with a *core.PeerLostError giving reason,
// and so does every later operation.
func (c *conn) fail(reason string) {
	c.failOnce.Do(func() {
		lost := &core.PeerLostError{PE: c.peer, Reason: reason}
		c.failed.Store(lost)
		close(c.dead)
		_ = c.nc.Close()

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
			b.ep.fail(&core.OpError{Op: "put", PE: c.peer, Provider: Name, Err: lost}, b.n)
		}
	})
}

// lostReason words why a connection broke.
func lostReason(d *domain, err error) string {
	if d.closing.Load() {
		return "connection closed while the domain closes"
	}
	if errors.Is(err, io.EOF) {
		return "its connection closed without a clean close (the process died?)"
	}
	return "connection broken: " + err.Error()
}

// readLoop is the connection's progress: it applies the peer's frames in
// order until the peer's clean close, an error or a malformed frame.
func (c *conn) readLoop() {
	defer close(c.readerDone)
	err := c.read()
	switch {
	case err == nil:
		c.fail("it closed its connection")
	case errors.Is(err, errFrame):
		c.d.log.Warn("tcp: dropping the connection of a PE that broke the protocol",
			"peer", c.peer, "addr", c.nc.RemoteAddr().String(), "err", err)
		c.fail("broke the protocol: " + err.Error())
	default:
		c.fail(lostReason(c.d, err))
	}
}

func (c *conn) read() error {
	var hb [maxHdrLen]byte
	for {
		idle := c.br.Buffered() == 0
		if c.applied != c.ackSent && (idle || c.applied-c.ackSent >= ackEvery) {
			c.ackSent = c.applied
			c.queue(&header{op: opAck, off: c.applied}, nil, nil)
		}
		if c.dirty && (idle || c.frames-c.flushed >= ackEvery) {
			c.flushed = c.frames
			c.readerFlush()
		}
		c.frames++
		if _, err := io.ReadFull(c.br, hb[:hdrLen]); err != nil {
			if err == io.EOF && c.byeSeen {
				return nil
			}
			return err
		}
		if c.byeSeen {
			return frameErr("%s after bye", opName(hb[0]))
		}
		h, err := decodeHeader(hb[:hdrLen])
		if err != nil {
			return err
		}
		if isRequest(h.op) {
			if _, err := io.ReadFull(c.br, hb[hdrLen:maxHdrLen]); err != nil {
				return err
			}
			if err := decodeExt(&h, hb[hdrLen:maxHdrLen]); err != nil {
				return err
			}
		}
		if err := c.apply(&h); err != nil {
			return err
		}
	}
}

// apply executes one frame whose header has been read.
func (c *conn) apply(h *header) error {
	d := c.d
	switch h.op {
	case opPut:
		b, err := d.target(h, h.arg, 1)
		if err != nil {
			return err
		}
		if _, err := io.ReadFull(c.br, b); err != nil {
			return err
		}
		d.notify(h.region, h.off, h.arg)
		c.applied++
	case opPutValue:
		b, err := d.target(h, uint64(h.typ), 1)
		if err != nil {
			return err
		}
		mem.StoreValue(b, 0, h.arg, int(h.typ))
		d.notify(h.region, h.off, uint64(h.typ))
		c.applied++
	case opAtomic, opFetch:
		t := core.AtomicType(h.typ)
		w := uint64(t.Size())
		b, err := d.target(h, w, w)
		if err != nil {
			return err
		}
		op := core.AtomicOp(h.aop)
		old := mem.Atomic(b, 0, op, t, h.arg, h.cmp)
		if op != core.AtomicRead {
			d.notify(h.region, h.off, w)
		}
		if h.op == opAtomic {
			c.applied++
		} else {
			c.replyValue(h.id, old)
		}
	case opGet:
		b, err := d.target(h, h.arg, 1)
		if err != nil {
			return err
		}
		rh := header{op: opReply, off: h.id, arg: h.arg}
		if len(b) > smallReply {
			c.queue(&rh, nil, b)
		} else {
			c.queue(&rh, b, nil)
		}
	case opGetValue:
		b, err := d.target(h, uint64(h.typ), 1)
		if err != nil {
			return err
		}
		c.replyValue(h.id, mem.LoadValue(b, 0, int(h.typ)))
	case opReply:
		return c.reply(h.off, h.arg)
	case opAck:
		return c.ack(h.off)
	case opBye:
		c.byeSeen = true
	}
	return nil
}

func (c *conn) replyValue(id, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	c.queue(&header{op: opReply, off: id, arg: 8}, b[:], nil)
}

// reply reads the payload of the reply to request id into its buffer.
func (c *conn) reply(id, n uint64) error {
	r := c.take(id)
	if r == nil {
		return frameErr("reply to request %#x, which is not outstanding", id)
	}
	if n != uint64(len(r.dst)) {
		c.finish(r, &core.PeerLostError{PE: c.peer, Reason: "broke the protocol"})
		return frameErr("reply of %d bytes to a request of %d", n, len(r.dst))
	}
	if _, err := io.ReadFull(c.br, r.dst); err != nil {
		c.finish(r, &core.PeerLostError{PE: c.peer, Reason: lostReason(c.d, err)})
		return err
	}
	c.finish(r, nil)
	return nil
}

// ack completes the operations the peer says it has applied, count in all.
// Counters are completed outside bmu, a few runs at a time.
func (c *conn) ack(count uint64) error {
	c.bmu.Lock()
	if count <= c.acked || count > c.sent {
		sent, acked := c.sent, c.acked
		c.bmu.Unlock()
		return frameErr("ack of %d operations when %d were sent and %d acked", count, sent, acked)
	}
	c.acked = count
	c.bmu.Unlock()
	for {
		var done [8]batch
		nd := 0
		c.bmu.Lock()
		for c.bhead < len(c.batches) && nd < len(done) {
			b := &c.batches[c.bhead]
			first := b.end - b.n + 1
			if first > count {
				break
			}
			k := min(b.end, count) - first + 1
			done[nd] = batch{ep: b.ep, n: k}
			nd++
			if b.n -= k; b.n > 0 {
				break
			}
			c.bhead++
		}
		if c.bhead == len(c.batches) {
			c.batches, c.bhead = c.batches[:0], 0
		}
		c.bmu.Unlock()
		for _, b := range done[:nd] {
			b.ep.complete(b.n)
		}
		if nd < len(done) {
			return nil
		}
	}
}
