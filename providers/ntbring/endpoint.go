package ntbring

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/providers/provkit"
)

// endpoint issues operations through its domain's protocol and counts them
// on its own counter. Operations on this host's own memory are done in
// place.
type endpoint struct {
	provkit.Endpoint // the provider's name and NPEs for the checks, and closed

	dom     *domain
	counter core.Counter

	// settles are what the non-blocking puts not yet quieted must do
	// before their sources may change (asyncPutter), by the put's number
	// on the counter.
	settleMu sync.Mutex
	settles  []settle
}

// settle is what one non-blocking put lent to the rings, to be settled
// by the first quiet that waits for the put.
type settle struct {
	seq uint64
	pe  int
	f   func()
}

var (
	_ core.Endpoint  = (*endpoint)(nil)
	_ core.PEQuieter = (*endpoint)(nil)
)

// own is r as one of this domain's regions and the size of each PE's
// part, or nil and provkit.Foreign: what provkit's checks take.
func (e *endpoint) own(r core.Region) (*region, int) {
	if reg, ok := r.(*region); ok && reg.dom == e.dom {
		return reg, reg.size
	}
	return nil, provkit.Foreign
}

// region returns r as this domain's region, or why it cannot be used: the
// endpoint's checks, then the domain's own state.
func (e *endpoint) region(op string, pe int, r core.Region) (*region, error) {
	if e.dom.closed.Load() {
		return nil, e.Err(op, pe, core.ErrClosed)
	}
	reg, size := e.own(r)
	if err := e.CheckRegion(op, pe, r, size); err != nil {
		return nil, err
	}
	if err := e.dom.err(); err != nil {
		return nil, e.Err(op, pe, err)
	}
	return reg, nil
}

func (e *endpoint) rma(op string, pe int, r core.Region, off, n int) (*region, error) {
	reg, err := e.region(op, pe, r)
	if err != nil {
		return nil, err
	}
	return reg, e.CheckRMA(op, pe, reg, reg.size, off, n)
}

// local is region reg of pe, a PE of this host: reg itself for this PE;
// another's as this process maps it, which only the composite with
// loopback registers (and it serves those pairs itself).
func (e *endpoint) local(op string, pe int, reg *region) (*region, error) {
	if pe == e.dom.pe {
		return reg, nil
	}
	_, j := e.dom.where(pe)
	if j < len(reg.host) && reg.host[j] != nil && reg.host[j].mem != nil {
		return reg.host[j], nil
	}
	return nil, e.Err(op, pe, e.dom.errNeedsHost(fmt.Sprintf("PE %d on this host", pe)))
}

// start enters an op in the pending table and counts it.
func (e *endpoint) start(pe int, dst []byte, wait bool) *op {
	return e.enter(&op{pe: pe, ctr: &e.counter, dst: dst}, wait)
}

// startValue is start for a GetValue, whose size bytes land in the op's
// own val.
func (e *endpoint) startValue(pe, size int) *op {
	o := &op{pe: pe, ctr: &e.counter}
	o.dst = o.val[:size]
	return e.enter(o, true)
}

// enter counts o and enters it in the pending table, where the answer
// finds it: o is complete but for its tag.
func (e *endpoint) enter(o *op, wait bool) *op {
	if wait {
		o.done = make(chan struct{}, 1)
	}
	o.seq = e.counter.Issue(1)
	e.dom.pending.add(o)
	return o
}

// send sends a request for op o; if it cannot be sent, o fails with the
// reason, which is also returned.
func (e *endpoint) send(o *op, m meta, payload []byte) error {
	h, j := e.dom.where(o.pe)
	m.src, m.dst, m.dpe, m.tag = uint8(e.dom.rank), uint8(h), uint8(j), o.tag
	m.size = uint32(len(payload))
	err := e.dom.proto.send(m, payload)
	if err != nil {
		if e.dom.pending.take(o.tag) != nil {
			o.finish(err)
		}
		if o.done != nil {
			<-o.done
		}
	}
	return err
}

// waitYields is how often a waiter yields the CPU, checking for its
// answer, before it arms timers and blocks: an answer from a neighbour
// often comes within a few yields, which cost far less than a timer and a
// sleep.
const waitYields = 32

// wait blocks until o finishes, the domain fails, or the timeout passes.
func (e *endpoint) wait(o *op) error {
	d := e.dom
	for range waitYields {
		select {
		case <-o.done:
			return o.err
		default:
		}
		runtime.Gosched()
	}
	t := time.NewTimer(d.s.timeout)
	defer t.Stop()
	tick := time.NewTicker(abortPoll)
	defer tick.Stop()
	for {
		select {
		case <-o.done:
			return o.err
		case <-tick.C:
			if err := d.abort(); err != nil {
				e.expire(o, err)
				return err
			}
		case <-t.C:
			err := lostError(o.pe, d.s.timeout)
			e.expire(o, err)
			return err
		}
	}
}

// expire ends o with err unless it finished meanwhile, and consumes its
// done signal.
func (e *endpoint) expire(o *op, err error) {
	if e.dom.pending.take(o.tag) != nil {
		o.finish(err)
	}
	<-o.done
}

// put sends a put; with nbi, src stays unchanged until the next quiet,
// and a protocol that can (asyncPutter) returns before the data left.
func (e *endpoint) put(name string, pe int, r core.Region, off int, src []byte, nbi bool) error {
	reg, err := e.rma(name, pe, r, off, len(src))
	if err != nil || len(src) == 0 {
		return err
	}
	h, j := e.dom.where(pe)
	if h == e.dom.rank {
		to, err := e.local(name, pe, reg)
		if err != nil {
			return err
		}
		to.land(off, src)
		return nil
	}
	if ap, ok := e.dom.proto.(asyncPutter); ok && nbi && len(src) > pioMax {
		return e.putAsync(name, ap, pe, reg, off, src)
	}
	if dp, ok := e.dom.proto.(directPutter); ok {
		if done, err := dp.putDirect(h, j, reg, off, src); err != nil {
			return e.Err(name, pe, err)
		} else if done {
			return nil
		}
	}
	if pp, ok := e.dom.proto.(piecePutter); ok {
		o := e.start(pe, nil, false)
		o.acks.Store(int32(pp.pieces(len(src)) - 1))
		m := meta{kind: kindPut, src: uint8(e.dom.rank), dst: uint8(h), dpe: uint8(j), region: uint8(reg.idx), off: uint32(off), tag: o.tag}
		if err := pp.putPieces(m, src); err != nil {
			if e.dom.pending.take(o.tag) != nil {
				o.finish(err)
			}
			return e.Err(name, pe, err)
		}
		return nil
	}
	step := e.dom.proto.maxPayload()
	for len(src) > 0 {
		n := min(step, len(src))
		o := e.start(pe, nil, false)
		if err := e.send(o, meta{kind: kindPut, region: uint8(reg.idx), off: uint32(off)}, src[:n]); err != nil {
			return e.Err(name, pe, err)
		}
		src, off = src[n:], off+n
	}
	return nil
}

// putAsync is put for a non-blocking put on a protocol that can start
// one: one op, completed by the DMA straight into the neighbour's heap or
// by the destination's ack of the last piece through the ring.
func (e *endpoint) putAsync(name string, ap asyncPutter, pe int, reg *region, off int, src []byte) error {
	o := e.start(pe, nil, false)
	finish := func(err error) {
		if e.dom.pending.take(o.tag) != nil {
			o.finish(err)
		}
	}
	h, j := e.dom.where(pe)
	if ap.putDirectAsync(h, j, reg, off, src, func(redo bool, err error) {
		if redo {
			// The link went down: round the other way, from a
			// goroutine, for this runs on a DMA's completion.
			go func() {
				if err := e.putRing(ap, o, reg, off, src); err != nil {
					finish(err)
				}
			}()
			return
		}
		finish(err)
	}) {
		return nil
	}
	if err := e.putRing(ap, o, reg, off, src); err != nil {
		finish(err)
		return e.Err(name, pe, err)
	}
	return nil
}

// putRing sends a non-blocking put as pieces through the ring under o's
// tag, without waiting; the next quiet settles what it lent.
func (e *endpoint) putRing(ap asyncPutter, o *op, reg *region, off int, src []byte) error {
	o.acks.Store(int32(e.dom.proto.(piecePutter).pieces(len(src)) - 1))
	h, j := e.dom.where(o.pe)
	m := meta{kind: kindPut, src: uint8(e.dom.rank), dst: uint8(h), dpe: uint8(j), region: uint8(reg.idx), off: uint32(off), tag: o.tag}
	f, err := ap.putPiecesAsync(m, src, func(err error) {
		if e.dom.pending.take(o.tag) != nil {
			o.finish(err)
		}
	})
	e.settleMu.Lock()
	e.settles = append(e.settles, settle{seq: o.seq, pe: o.pe, f: f})
	e.settleMu.Unlock()
	return err
}

// settle runs what the non-blocking puts numbered up to seq left to do;
// the caller has waited for them. Later puts, another goroutine's that
// this quiet does not wait for, stay lent: settling one still in flight
// could go on copying its source after its own quiet returned and its
// issuer reused it.
func (e *endpoint) settle(seq uint64) { e.settleTo(seq, nil) }

// settleTo is settle for the puts to the PEs that to accepts (nil: all),
// the others staying lent: a per-PE quiet waited for those alone.
func (e *endpoint) settleTo(seq uint64, to func(pe int) bool) {
	e.settleMu.Lock()
	// A put takes its number before it records its loan, so the list is
	// nearly in order, not quite: look at every entry.
	mine, later := e.settles, 0
	for _, s := range e.settles {
		if s.seq > seq || to != nil && !to(s.pe) {
			later++
		}
	}
	if later == 0 {
		e.settles = nil
	} else {
		mine = make([]settle, 0, len(e.settles)-later)
		keep := e.settles[:0]
		for _, s := range e.settles {
			if s.seq <= seq && (to == nil || to(s.pe)) {
				mine = append(mine, s)
			} else {
				keep = append(keep, s)
			}
		}
		clear(e.settles[len(keep):])
		e.settles = keep
	}
	e.settleMu.Unlock()
	for _, s := range mine {
		s.f()
	}
}

// get sends the requests of a get; with wait, it returns once dst is full.
func (e *endpoint) get(name string, pe int, r core.Region, off int, dst []byte, wait bool) error {
	reg, err := e.rma(name, pe, r, off, len(dst))
	if err != nil || len(dst) == 0 {
		return err
	}
	if e.dom.hostOf(pe) == e.dom.rank {
		from, err := e.local(name, pe, reg)
		if err != nil {
			return err
		}
		copy(dst, from.mem[off:])
		return nil
	}
	step := e.dom.proto.maxPayload()
	var first [1]*op // most gets are one piece: keep its op off the heap
	ops := first[:0]
	for len(dst) > 0 {
		n := min(step, len(dst))
		o := e.start(pe, dst[:n], wait)
		req := o.req[:getRequestSize]
		encodeGetRequest(req, uint32(n))
		if err := e.send(o, meta{kind: kindGetReq, region: uint8(reg.idx), off: uint32(off)}, req); err != nil {
			return e.Err(name, pe, errors.Join(err, e.waitAll(ops)))
		}
		if wait {
			ops = append(ops, o)
		}
		dst, off = dst[n:], off+n
	}
	if err := e.waitAll(ops); err != nil {
		return e.Err(name, pe, err)
	}
	return nil
}

// waitAll waits for every op and returns the first error.
func (e *endpoint) waitAll(ops []*op) error {
	var first error
	for _, o := range ops {
		if err := e.wait(o); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Put implements core.Endpoint: it returns once src has been DMAed into
// the first link's window; the ack from pe completes it.
func (e *endpoint) Put(pe int, r core.Region, off int, src []byte) error {
	return e.put("put", pe, r, off, src, false)
}

// PutNBI implements core.Endpoint: on the ring protocol a put larger than
// a store returns once its DMAs are queued, and the next quiet waits for
// them; on the seed protocol it is Put.
func (e *endpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	return e.put("put-nbi", pe, r, off, src, true)
}

// Get implements core.Endpoint: the request travels to pe, the data back.
func (e *endpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	return e.get("get", pe, r, off, dst, true)
}

// GetNBI implements core.Endpoint: dst is filled by Quiet.
func (e *endpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	return e.get("get-nbi", pe, r, off, dst, false)
}

// PutValue implements core.Endpoint; the owner stores the value with one
// store. v goes by value as far as it can: to a neighbour's window, or
// into this host's region.
func (e *endpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	reg, err := e.value("put-value", pe, r, off, size)
	if err != nil {
		return err
	}
	h, j := e.dom.where(pe)
	if h == e.dom.rank {
		to, err := e.local("put-value", pe, reg)
		if err != nil {
			return err
		}
		to.landValue(off, v, size)
		return nil
	}
	if vp, ok := e.dom.proto.(valuePutter); ok {
		if done, err := vp.putValueDirect(h, j, reg, off, v, size); err != nil {
			return e.Err("put-value", pe, err)
		} else if done {
			return nil
		}
	}
	// Elsewhere it travels as the bytes of a put, which need a buffer of
	// their own beside the op the put takes.
	b := make([]byte, size)
	mem.StoreValue(b, 0, v, size)
	return e.put("put-value", pe, r, off, b, false)
}

// GetValue implements core.Endpoint: the request and the answer use the
// op's own buffers.
func (e *endpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	reg, err := e.value("get-value", pe, r, off, size)
	if err != nil {
		return 0, err
	}
	if e.dom.hostOf(pe) == e.dom.rank {
		from, err := e.local("get-value", pe, reg)
		if err != nil {
			return 0, err
		}
		return mem.LoadValue(from.mem, off, size), nil
	}
	o := e.startValue(pe, size)
	req := o.req[:getRequestSize]
	encodeGetRequest(req, uint32(size))
	if err := e.send(o, meta{kind: kindGetReq, region: uint8(reg.idx), off: uint32(off)}, req); err != nil {
		return 0, e.Err("get-value", pe, err)
	}
	if err := e.wait(o); err != nil {
		return 0, e.Err("get-value", pe, err)
	}
	return mem.LoadValue(o.val[:], 0, size), nil
}

// value checks a PutValue's or GetValue's target and returns its region.
func (e *endpoint) value(op string, pe int, r core.Region, off, size int) (*region, error) {
	reg, err := e.region(op, pe, r)
	if err != nil {
		return nil, err
	}
	return reg, e.CheckValue(op, pe, reg, reg.size, off, size)
}

// atomics is what the owner executes: everything, with sync/atomic.
var atomics = core.FullAtomics()

func (e *endpoint) amo(name string, pe int, r core.Region, off int, a amoRequest, fetch bool) (uint64, error) {
	reg, err := e.region(name, pe, r)
	if err != nil {
		return 0, err
	}
	if err := e.CheckAtomic(name, pe, reg, reg.size, off, a.op, a.typ, &atomics); err != nil {
		return 0, err
	}
	if e.dom.hostOf(pe) == e.dom.rank {
		at, err := e.local(name, pe, reg)
		if err != nil {
			return 0, err
		}
		return at.atomic(off, a), nil
	}
	o := e.start(pe, nil, fetch)
	a.encode(o.req[:])
	if err := e.send(o, meta{kind: kindAmoReq, region: uint8(reg.idx), off: uint32(off)}, o.req[:]); err != nil {
		return 0, e.Err(name, pe, err)
	}
	if !fetch {
		return 0, nil
	}
	if err := e.wait(o); err != nil {
		return 0, e.Err(name, pe, err)
	}
	return o.old, nil
}

// Atomic implements core.Endpoint: the owner executes it; it is complete
// when the owner's answer arrives, at Quiet.
func (e *endpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	if err := e.CheckNonFetching("atomic", pe, op, t); err != nil {
		return err
	}
	_, err := e.amo("atomic", pe, r, off, amoRequest{op: op, typ: t, operand: operand}, false)
	return err
}

// PutSignal implements core.Endpoint: Put, Fence and Atomic, whose fence
// waits for the put (the ring carries no put-with-signal as one).
func (e *endpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, operand)
}

// FetchAtomic implements core.Endpoint: the request travels to the owner,
// which executes it and sends the old value back.
func (e *endpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	return e.amo("fetch-atomic", pe, r, off, amoRequest{op: op, typ: t, operand: operand, compare: compare}, true)
}

// Fence implements core.Endpoint. Transfers to one host may take different
// workers and overtake each other, so a fence waits for every answer, as
// Quiet does, without reporting their errors (Quiet does).
func (e *endpoint) Fence() error {
	if err := e.CheckOpen("fence"); err != nil {
		return err
	}
	seq := e.counter.Issued()
	err := e.complete(seq)
	e.settle(seq)
	if err != nil {
		return e.Err("fence", -1, err)
	}
	return nil
}

// Quiet implements core.Endpoint: it waits for the answer to every
// operation issued so far, and returns the first error among them.
func (e *endpoint) Quiet() error {
	if err := e.CheckOpen("quiet"); err != nil {
		return err
	}
	seq := e.counter.Issued()
	err := e.complete(seq)
	e.settle(seq)
	if err == nil {
		err = e.counter.TakeErr()
	} else {
		e.counter.TakeErr()
	}
	if err != nil {
		return e.Err("quiet", -1, err)
	}
	return nil
}

// complete waits until every operation numbered up to seq completed,
// whichever goroutine issued it; operations issued since, which may
// complete first, are not waited for. An operation that waited longer
// than the timeout for its answer fails with a peer-lost error naming its
// target; a long queue of operations that keep completing is not a lost
// peer.
func (e *endpoint) complete(seq uint64) error {
	d := e.dom
	for {
		err := e.counter.Wait(seq, d.s.timeout, d.abort)
		if !errors.Is(err, core.ErrTimeout) {
			return err
		}
		old := time.Now().Add(-d.s.timeout)
		stale := d.pending.takeIf(func(o *op) bool { return o.ctr == &e.counter && o.seq <= seq && o.start.Before(old) })
		if len(stale) > 0 {
			lost := lostError(stale[0].pe, d.s.timeout)
			for _, o := range stale {
				o.finish(lost)
			}
			return lost
		}
	}
}

// Counter implements core.Endpoint.
func (e *endpoint) Counter() *core.Counter { return &e.counter }

// Close implements core.Endpoint: it quiets and releases the endpoint.
func (e *endpoint) Close() error {
	if e.Closed() {
		return nil
	}
	err := e.Quiet()
	e.MarkClosed()
	d := e.dom
	d.mu.Lock()
	delete(d.endpoints, e)
	d.mu.Unlock()
	if err != nil && !errors.Is(err, core.ErrClosed) {
		return err
	}
	return nil
}
