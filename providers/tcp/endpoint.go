package tcp

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/providers/provkit"
)

// endpoint issues operations over its domain's connections; it owns only
// its counter. Operations on this PE's own memory are executed in place.
//
// Counting: every operation is issued on the counter when it starts.
// Blocking ones complete when they return; puts and non-fetching atomics
// when the target acknowledges having applied them; non-blocking gets when
// their reply has filled the buffer. Quiet waits for the counter.
type endpoint struct {
	provkit.Endpoint // the provider's name and NPEs for the checks, and closed

	d       *domain
	counter core.Counter
	batch   atomic.Bool // in a batch (batch.go): small puts and atomics wait for more

	// Quiet sleeps on qcond while qwaiting; completions broadcast only
	// then, so they cost one atomic load while nobody quiets.
	qwaiting atomic.Int32
	qmu      sync.Mutex
	qcond    sync.Cond
}

var (
	_ core.Endpoint  = (*endpoint)(nil)
	_ core.PEQuieter = (*endpoint)(nil)
	_ core.Batcher   = (*endpoint)(nil)
)

// maxFrame is the largest payload of one frame: longer puts and gets are
// split, so one frame's length always fits the target's checks.
const maxFrame = 1 << 30

// own is r as one of this domain's regions and the size of each PE's
// part, or nil and provkit.Foreign: what provkit's checks take.
func (e *endpoint) own(r core.Region) (*region, int) {
	if reg, ok := r.(*region); ok && reg.d == e.d {
		return reg, reg.size
	}
	return nil, provkit.Foreign
}

// rma validates an access of n bytes at off on pe and returns the region
// and the connection to pe (nil for this PE).
func (e *endpoint) rma(op string, pe int, r core.Region, off, n int) (*region, *conn, error) {
	reg, size := e.own(r)
	return e.to(pe, reg, e.CheckRMA(op, pe, r, size, off, n))
}

// value validates a PutValue or GetValue like rma.
func (e *endpoint) value(op string, pe int, r core.Region, off, size int) (*region, *conn, error) {
	reg, regionSize := e.own(r)
	return e.to(pe, reg, e.CheckValue(op, pe, r, regionSize, off, size))
}

// amo validates an atomic like rma.
func (e *endpoint) amo(opName string, pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType) (*region, *conn, error) {
	reg, size := e.own(r)
	return e.to(pe, reg, e.CheckAtomic(opName, pe, r, size, off, op, t, &fullAtomics))
}

// to completes a check of an operation on pe: the region and the
// connection to pe, or the check's error.
func (e *endpoint) to(pe int, reg *region, err error) (*region, *conn, error) {
	if err != nil {
		return nil, nil, err
	}
	return reg, e.d.conns[pe], nil
}

// local counts an operation executed in place.
func (e *endpoint) local() {
	e.counter.Complete(e.counter.Issue(1), 1)
}

// send issues a non-fetching operation on c, which numbers it on the
// counter once it is queued (sendQueue.put).
func (e *endpoint) send(op string, c *conn, h *header, payload []byte) error {
	if err := c.send(e, h, payload, nil); err != nil {
		return e.Err(op, c.peer, err)
	}
	return nil
}

func (e *endpoint) put(op string, pe int, r core.Region, off int, src []byte) error {
	reg, c, err := e.rma(op, pe, r, off, len(src))
	if err != nil || len(src) == 0 {
		return err
	}
	if c == nil {
		copy(reg.mem[off:], src)
		e.d.notify(reg.idx, uint64(off), uint64(len(src)))
		e.local()
		return nil
	}
	if h := e.d.headFirst(src); h > 0 {
		// The bulk first, its source placed as its copy lands (putalign.go).
		if err := e.putFrames(op, c, reg.idx, off+h, src[h:]); err != nil {
			return err
		}
		src = src[:h]
	}
	return e.putFrames(op, c, reg.idx, off, src)
}

// putFrames sends src to off in region idx through c, in frames of up to
// maxFrame bytes.
func (e *endpoint) putFrames(op string, c *conn, idx uint32, off int, src []byte) error {
	for len(src) > 0 {
		n := min(len(src), maxFrame)
		h := header{op: opPut, region: idx, off: uint64(off), arg: uint64(n)}
		if err := e.send(op, c, &h, src[:n]); err != nil {
			return err
		}
		src, off = src[n:], off+n
	}
	return nil
}

// Put implements core.Endpoint. Up to InjectSize bytes are copied into the
// connection's queue; larger puts are written from src before Put returns.
func (e *endpoint) Put(pe int, r core.Region, off int, src []byte) error {
	return e.put("put", pe, r, off, src)
}

// PutNBI implements core.Endpoint like Put.
func (e *endpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	return e.put("put-nbi", pe, r, off, src)
}

// PutValue implements core.Endpoint; the target stores the value with one
// store, as loopback does.
func (e *endpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	reg, c, err := e.value("put-value", pe, r, off, size)
	if err != nil {
		return err
	}
	if c == nil {
		mem.StoreValue(reg.mem, off, v, size)
		e.d.notify(reg.idx, uint64(off), uint64(size))
		e.local()
		return nil
	}
	h := header{op: opPutValue, typ: byte(size), region: reg.idx, off: uint64(off), arg: v}
	return e.send("put-value", c, &h, nil)
}

// PutSignal implements core.Endpoint as one operation (CapPutSignal): the
// put's frame and the signal's atomic are queued together and go out in
// one write, which the target
// reads and applies in order, so a PE waiting on the signal wakes once.
// Issued apart, the signal would follow the put within burstGap and be
// left to the writer goroutine, whose wake-up, where PEs have more than
// one processor, cost more than the put (docs/measuring.md, "A put and
// its signal in one write"). A put that
// does not fit one frame, or a locked caller's large one (putalign.go),
// goes apart (core.PutFenceSignal): its write outweighs the wake-up.
func (e *endpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	const name = "put-signal"
	if err := core.CheckSignal(sigOff, op); err != nil {
		return e.Err(name, pe, err)
	}
	if len(src) == 0 {
		return e.Atomic(pe, sigR, sigOff, op, core.Uint64, operand)
	}
	reg, c, err := e.rma(name, pe, r, off, len(src))
	if err != nil {
		return err
	}
	sreg, _, err := e.amo(name, pe, sigR, sigOff, op, core.Uint64)
	if err != nil {
		return err
	}
	if c == nil || len(src) > maxFrame || e.d.headFirst(src) > 0 {
		return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, operand)
	}
	h := header{op: opPut, region: reg.idx, off: uint64(off), arg: uint64(len(src))}
	sig := header{op: opAtomic, typ: byte(core.Uint64), aop: byte(op), region: sreg.idx, off: uint64(sigOff), arg: operand}
	if err := c.send(e, &h, src, &sig); err != nil {
		return e.Err(name, pe, err)
	}
	return nil
}

// call sends a request and waits for its reply, which fills dst (or, dst
// nil, the request's value, which call returns).
func (e *endpoint) call(op string, c *conn, h *header, dst []byte) (uint64, error) {
	req, err := c.newRequest(dst, nil, false)
	if err != nil {
		return 0, e.Err(op, c.peer, err)
	}
	return e.await1(op, c, h, req)
}

// await1 sends the request h of req, made for it, and waits for its
// reply, as call does.
func (e *endpoint) await1(op string, c *conn, h *header, req *request) (uint64, error) {
	if err := c.request(h, req); err != nil {
		if c.take(req.id) == req {
			c.release(req)
			return 0, e.Err(op, c.peer, err)
		}
		// The connection failed meanwhile and is ending the request.
	} else {
		c.flushNow()
		pl := startAssist(e.d)
		c.assist(&pl, func() bool { return len(req.ch) > 0 })
	}
	<-req.ch
	v, err := binary.LittleEndian.Uint64(req.val[:]), req.err
	c.release(req)
	if err != nil {
		return 0, e.Err(op, c.peer, err)
	}
	e.local()
	return v, nil
}

func (e *endpoint) get(op string, pe int, r core.Region, off int, dst []byte) error {
	reg, c, err := e.rma(op, pe, r, off, len(dst))
	if err != nil || len(dst) == 0 {
		return err
	}
	if c == nil {
		copy(dst, reg.mem[off:])
		e.local()
		return nil
	}
	for len(dst) > 0 {
		n := min(len(dst), maxFrame)
		h := header{op: opGet, region: reg.idx, off: uint64(off), arg: uint64(n)}
		if _, err := e.call(op, c, &h, dst[:n]); err != nil {
			return err
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// Get implements core.Endpoint: the reply is read straight into dst.
func (e *endpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	return e.get("get", pe, r, off, dst)
}

// GetNBI implements core.Endpoint: dst is filled by the connection's
// progress goroutine; Quiet waits for it.
func (e *endpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	reg, c, err := e.rma("get-nbi", pe, r, off, len(dst))
	if err != nil || len(dst) == 0 {
		return err
	}
	if c == nil {
		copy(dst, reg.mem[off:])
		e.local()
		return nil
	}
	for len(dst) > 0 {
		n := min(len(dst), maxFrame)
		req, err := c.newRequest(dst[:n], e, true)
		if err != nil {
			return e.Err("get-nbi", pe, err)
		}
		h := header{op: opGet, region: reg.idx, off: uint64(off), arg: uint64(n)}
		if err := c.request(&h, req); err != nil {
			if c.take(req.id) == req {
				seq := req.seq
				c.release(req)
				e.counter.Complete(seq, 1) // never sent: the error is returned, not recorded
				return e.Err("get-nbi", pe, err)
			}
		}
		dst, off = dst[n:], off+n
	}
	return nil
}

// GetValue implements core.Endpoint.
func (e *endpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	reg, c, err := e.value("get-value", pe, r, off, size)
	if err != nil {
		return 0, err
	}
	if c == nil {
		v := mem.LoadValue(reg.mem, off, size)
		e.local()
		return v, nil
	}
	h := header{op: opGetValue, typ: byte(size), region: reg.idx, off: uint64(off)}
	return e.call("get-value", c, &h, nil)
}

// Atomic implements core.Endpoint: the target executes it with
// sync/atomic (internal/mem.Atomic), so it is atomic with the target's own
// atomics on the word. AtomicCSwap needs a compare operand, which only
// FetchAtomic takes.
func (e *endpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	reg, c, err := e.amo("atomic", pe, r, off, op, t)
	if err != nil {
		return err
	}
	if err := e.CheckNonFetching("atomic", pe, op, t); err != nil {
		return err
	}
	if c == nil {
		mem.Atomic(reg.mem, off, op, t, operand, 0)
		if op != core.AtomicRead {
			e.d.notify(reg.idx, uint64(off), uint64(t.Size()))
		}
		e.local()
		return nil
	}
	h := header{op: opAtomic, typ: byte(t), aop: byte(op), region: reg.idx, off: uint64(off), arg: operand}
	return e.send("atomic", c, &h, nil)
}

// FetchAtomic implements core.Endpoint like Atomic and returns the old
// value, which travels back in the reply.
func (e *endpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	reg, c, err := e.amo("fetch-atomic", pe, r, off, op, t)
	if err != nil {
		return 0, err
	}
	if c == nil {
		old := mem.Atomic(reg.mem, off, op, t, operand, compare)
		if op != core.AtomicRead {
			e.d.notify(reg.idx, uint64(off), uint64(t.Size()))
		}
		e.local()
		return old, nil
	}
	h := header{op: opFetch, typ: byte(t), aop: byte(op), region: reg.idx, off: uint64(off), arg: operand, cmp: compare}
	return e.call("fetch-atomic", c, &h, nil)
}

// Fence implements core.Endpoint. It costs nothing: each pair of PEs has
// one connection, whose frames the target applies in order.
func (e *endpoint) Fence() error {
	if err := e.CheckOpen("fence"); err != nil {
		return err
	}
	return nil
}

// Quiet implements core.Endpoint: it writes what is queued and waits until
// the targets have acknowledged every put and atomic and every
// non-blocking get has its data. It returns the first error among them: a
// lost peer's operations fail with core.ErrPeerLost.
func (e *endpoint) Quiet() error {
	if err := e.CheckOpen("quiet"); err != nil {
		return err
	}
	return e.quiet()
}

// quiet waits for the operations numbered up to the count issued when it
// starts, whichever goroutine issued them, by the counter's watermark: a
// count of completions would let operations issued later, which may
// complete first, stand in for them.
func (e *endpoint) quiet() error {
	target := e.counter.Issued()
	if e.counter.CompletedUpTo() < target {
		e.await(e.d.conns, func() bool { return e.counter.CompletedUpTo() >= target })
	}
	return e.counter.TakeErr()
}

// await is a quiet's wait until done holds, done being met by the
// answers that come over conns (nil entries are skipped): it writes what
// they have queued, reads the answers itself while polling is on, and
// then sleeps until a completion wakes it.
func (e *endpoint) await(conns []*conn, done func() bool) {
	for _, c := range conns {
		if c != nil {
			c.flushNow()
		}
	}
	// Read the acknowledgements ourselves while polling is on.
	pl := startAssist(e.d)
	for _, c := range conns {
		if c != nil && !done() {
			c.assist(&pl, done)
		}
	}
	// A locked caller reads what has come before it sleeps.
	if e.d.lockedCallers {
		for _, c := range conns {
			if c != nil && !done() {
				c.serveOnce(done)
			}
		}
		// After a large put, waiting for its acknowledgement in
		// poll(2) is one wake-up where sleeping is two hand-offs.
		for _, c := range conns {
			if c != nil && !done() {
				c.awaitLarge(done)
			}
		}
	}
	// Block at once rather than spin: the PE that answers may need this
	// CPU. Every operation completes or fails, by ack, reply or its
	// connection's failure, each of which wakes quiet, so this wait ends.
	e.qmu.Lock()
	e.qwaiting.Add(1)
	for !done() {
		e.qcond.Wait()
	}
	e.qwaiting.Add(-1)
	e.qmu.Unlock()
}

// QuietPEs implements core.PEQuieter: it writes what is queued to the
// listed PEs and waits for their acks of this endpoint's puts and
// atomics queued before it began, and for the replies to its
// non-blocking gets to them; the operations to other PEs go on. It
// returns the error of a listed PE whose connection failed.
func (e *endpoint) QuietPEs(pes []int) error {
	if err := e.CheckPEs("pe-quiet", pes); err != nil {
		return err
	}
	var buf [8]peMark
	marks := buf[:0]
	for _, pe := range pes {
		if c := e.d.conns[pe]; c != nil {
			m := peMark{c: c, ack: c.q.lastOf(e), gen: c.reqs.generation()}
			if !m.done(e) {
				marks = append(marks, m)
			}
		}
	}
	if len(marks) > 0 {
		e.quietMarks(marks)
	}
	for _, pe := range pes {
		if c := e.d.conns[pe]; c != nil {
			if err := c.err(); err != nil {
				return e.Err("pe-quiet", pe, err)
			}
		}
	}
	return nil
}

// peMark is what a per-PE quiet waits for on the connection to one PE:
// the peer's acks to reach ack (sendQueue.lastOf), and the replies to the
// endpoint's non-blocking gets numbered up to gen in the request table.
type peMark struct {
	c   *conn
	ack uint64
	gen uint32
}

func (m *peMark) done(e *endpoint) bool {
	return m.c.q.ackedThrough(m.ack) && !m.c.reqs.pendingNBI(e, m.gen)
}

// quietMarks is quiet's wait for the marks alone, on their connections.
func (e *endpoint) quietMarks(marks []peMark) {
	var buf [8]*conn
	conns := buf[:0]
	for i := range marks {
		conns = append(conns, marks[i].c)
	}
	e.await(conns, func() bool {
		for i := range marks {
			if !marks[i].done(e) {
				return false
			}
		}
		return true
	})
}

// complete records the completion of the n operations numbered from seq
// and wakes quiet.
func (e *endpoint) complete(seq, n uint64) {
	e.counter.Complete(seq, n)
	e.wakeQuiet()
}

// fail records the n operations numbered from seq as ended by err (the
// error counted once) and wakes quiet.
func (e *endpoint) fail(err error, seq, n uint64) {
	e.counter.Fail(seq, err)
	e.counter.Complete(seq+1, n-1)
	e.wakeQuiet()
}

// wakeQuiet is a Dekker handshake with quiet: the completion's atomic add
// comes before the load of qwaiting here, quiet's add to qwaiting before
// its load of the count, so one of the two sees the other.
func (e *endpoint) wakeQuiet() {
	if e.qwaiting.Load() != 0 {
		e.qmu.Lock()
		e.qcond.Broadcast()
		e.qmu.Unlock()
	}
}

// Counter implements core.Endpoint.
func (e *endpoint) Counter() *core.Counter { return &e.counter }

// Close implements core.Endpoint: it quiets the endpoint and releases it.
// Idempotent; later operations fail with ErrClosed.
func (e *endpoint) Close() error {
	if !e.MarkClosed() {
		return nil
	}
	err := e.quiet()
	d := e.d
	d.mu.Lock()
	delete(d.endpoints, e) // a no-op on a nil map, after the domain closed
	d.mu.Unlock()
	if err != nil {
		return e.Err("close", -1, err)
	}
	return nil
}
