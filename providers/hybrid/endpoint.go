package hybrid

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/loopback"
)

// endpoint is an endpoint of each transport behind one: every operation
// goes to the one that serves its target PE; Fence and Quiet span both.
type endpoint struct {
	d            *domain
	intra, inter core.Endpoint
	// route is d.route: this host's rank of a PE, or -1 (see domain).
	route []int
	// lb is intra's operations without checks, which the composite's
	// checks stand in for; fast says intra is loopback's, so lb and every
	// region's lb are set.
	lb   loopback.Prechecked
	fast bool
	// interSignal: the inter-host transport carries a put-with-signal as
	// one operation (core.CapPutSignal).
	interSignal bool
	closed      atomic.Bool
	closeOnce   sync.Once
	closeErr    error

	// serial: the endpoint is Serialized (one goroutine at a time), so
	// busyS, a plain word, stands in for busyInter.
	serial bool
	busyS  bool
	// The composite counts nothing on the hot path: its Counter is the
	// sum of the transports' counters, brought into ctr when asked.
	syncMu             sync.Mutex
	ctr                core.Counter
	synced, syncedDone uint64 // what ctr counts, under syncMu

	// busyInter says an operation that completes at Quiet went between
	// hosts since the last Quiet began: a Quiet asks the inter-host
	// transport only then, so puts that stay inside the host pay nothing
	// for it. The intra-host transport's Quiet, a memory barrier, is
	// always asked: it orders direct stores (shmem_ptr) too.
	busyInter atomic.Bool
}

var (
	_ core.Endpoint  = (*endpoint)(nil)
	_ core.PEQuieter = (*endpoint)(nil)
)

// atomics is what the composite executes: what both transports do.
func (e *endpoint) atomics() *core.AtomicSupport { return &e.d.atomics }

func (e *endpoint) opErr(op string, pe int, err error) error {
	return &core.OpError{Op: op, PE: pe, Provider: e.d.p.Name(), Err: err}
}

// target checks r and returns it as the composite's region.
func (e *endpoint) target(r core.Region) (*region, error) {
	reg, ok := r.(*region)
	if !ok || reg.d != e.d {
		return nil, errNotRegion
	}
	return reg, nil
}

var errNotRegion = errors.Join(core.ErrInvalid, errors.New("region is not one of this domain's"))

// deferred notes an operation that completes at the next Quiet, issued
// through the intra-host transport or not: only one between hosts needs
// noting, for Quiet to ask that transport. The flag is read before it is
// written, so a stream of them writes it once.
func (e *endpoint) deferred(intra bool) {
	if intra {
		return
	}
	if e.serial {
		e.busyS = true
		return
	}
	if !e.busyInter.Load() {
		e.busyInter.Store(true)
	}
}

// intraErr numbers the PE of an intra-host error in the job.
func (e *endpoint) intraErr(err error) error {
	if err == nil {
		return nil
	}
	return e.d.globalPE(err)
}

// valid is the check of every operation's fast path: r as this domain's
// region if the endpoint is open and an access of n > 0 bytes at off in
// pe's part of r is valid, else nil. A nil sends the operation down its
// slow path, which checks it in full and says what is wrong (or does
// nothing, for n == 0). It is small enough to inline, and what it lets
// through needs no check by the transport that carries it (see
// loopback.Prechecked).
func (e *endpoint) valid(pe int, r core.Region, off, n int) *region {
	reg, ok := r.(*region)
	if !ok || reg.d != e.d || !core.AccessValid(pe, len(e.route), off, n, reg.size) || e.closed.Load() {
		return nil
	}
	return reg
}

// valueSize reports whether PutValue and GetValue move size bytes.
func valueSize(size int) bool { return size&(size-1) == 0 && uint(size-1) < 8 }

// atomicValid is the rest of an atomic's fast-path check, after valid:
// the operation is aligned to n, t's size, and one both transports
// execute.
func (e *endpoint) atomicValid(off, n int, op core.AtomicOp, t core.AtomicType) bool {
	return off&(n-1) == 0 && e.d.atomics.Supports(op, t)
}

// Each operation checks itself once (valid), then goes to the transport
// of its target PE: loopback's prechecked operations (e.lb) for a PE of
// this host, the inter-host transport's for the others. What fails that
// check is checked in full (checkRMA and the others), which names what is
// wrong; what passes the full check (an access of 0 bytes, a closed
// endpoint, an operation only the transport refuses) goes through the
// transports' own checked calls, which say what they do with it.

// checkRMA is the full check of an access of n bytes at off in pe's part
// of r: r as this domain's region, or the error of operation op.
func (e *endpoint) checkRMA(op string, pe int, r core.Region, off, n int) (*region, error) {
	reg, err := e.target(r)
	if err == nil {
		err = core.CheckRMA(pe, e.d.npes, off, n, reg.size)
	}
	if err != nil {
		return nil, e.opErr(op, pe, err)
	}
	return reg, nil
}

// checkValue is checkRMA for a PutValue or GetValue of size bytes.
func (e *endpoint) checkValue(op string, pe int, r core.Region, off, size int) (*region, error) {
	reg, err := e.target(r)
	if err == nil {
		err = core.CheckValue(pe, e.d.npes, off, size, reg.size)
	}
	if err != nil {
		return nil, e.opErr(op, pe, err)
	}
	return reg, nil
}

// checkAtomic is checkRMA for an atomic aop on t.
func (e *endpoint) checkAtomic(op string, pe int, r core.Region, off int, aop core.AtomicOp, t core.AtomicType) (*region, error) {
	reg, err := e.target(r)
	if err == nil {
		err = core.CheckAtomic(pe, e.d.npes, off, reg.size, aop, t, e.atomics())
	}
	if err != nil {
		return nil, e.opErr(op, pe, err)
	}
	return reg, nil
}

func (e *endpoint) Put(pe int, r core.Region, off int, src []byte) error {
	reg, fast := e.valid(pe, r, off, len(src)), e.fast
	if reg == nil {
		var err error
		if reg, err = e.checkRMA("put", pe, r, off, len(src)); err != nil {
			return err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			e.lb.Put(l, reg.lb, off, src)
			return nil
		}
		return e.intraErr(e.intra.Put(l, reg.intra, off, src))
	}
	err := e.inter.Put(pe, reg.inter, off, src)
	if err == nil {
		e.deferred(false)
	}
	return err
}

func (e *endpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	reg, fast := e.valid(pe, r, off, len(src)), e.fast
	if reg == nil {
		var err error
		if reg, err = e.checkRMA("put", pe, r, off, len(src)); err != nil {
			return err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			e.lb.Put(l, reg.lb, off, src)
			return nil
		}
		return e.intraErr(e.intra.PutNBI(l, reg.intra, off, src))
	}
	err := e.inter.PutNBI(pe, reg.inter, off, src)
	if err == nil {
		e.deferred(false)
	}
	return err
}

func (e *endpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	reg, fast := e.valid(pe, r, off, len(dst)), e.fast
	if reg == nil {
		var err error
		if reg, err = e.checkRMA("get", pe, r, off, len(dst)); err != nil {
			return err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			e.lb.Get(l, reg.lb, off, dst)
			return nil
		}
		return e.intraErr(e.intra.Get(l, reg.intra, off, dst))
	}
	return e.inter.Get(pe, reg.inter, off, dst)
}

func (e *endpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	reg, fast := e.valid(pe, r, off, len(dst)), e.fast
	if reg == nil {
		var err error
		if reg, err = e.checkRMA("get", pe, r, off, len(dst)); err != nil {
			return err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			e.lb.Get(l, reg.lb, off, dst)
			return nil
		}
		return e.intraErr(e.intra.GetNBI(l, reg.intra, off, dst))
	}
	err := e.inter.GetNBI(pe, reg.inter, off, dst)
	if err == nil {
		e.deferred(false)
	}
	return err
}

func (e *endpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	reg, fast := e.valid(pe, r, off, size), e.fast
	if reg == nil || !valueSize(size) {
		var err error
		if reg, err = e.checkValue("put", pe, r, off, size); err != nil {
			return err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			e.lb.PutValue(l, reg.lb, off, v, size)
			return nil
		}
		return e.intraErr(e.intra.PutValue(l, reg.intra, off, v, size))
	}
	err := e.inter.PutValue(pe, reg.inter, off, v, size)
	if err == nil {
		e.deferred(false)
	}
	return err
}

func (e *endpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	reg, fast := e.valid(pe, r, off, size), e.fast
	if reg == nil || !valueSize(size) {
		var err error
		if reg, err = e.checkValue("get", pe, r, off, size); err != nil {
			return 0, err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			return e.lb.GetValue(l, reg.lb, off, size), nil
		}
		v, err := e.intra.GetValue(l, reg.intra, off, size)
		return v, e.intraErr(err)
	}
	return e.inter.GetValue(pe, reg.inter, off, size)
}

func (e *endpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	n := t.Size()
	reg, fast := e.valid(pe, r, off, n), e.fast
	if reg == nil || !e.atomicValid(off, n, op, t) || op == core.AtomicCSwap {
		var err error
		if reg, err = e.checkAtomic("atomic", pe, r, off, op, t); err != nil {
			return err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			e.lb.Atomic(l, reg.lb, off, op, t, operand)
			return nil
		}
		return e.intraErr(e.intra.Atomic(l, reg.intra, off, op, t, operand))
	}
	err := e.inter.Atomic(pe, reg.inter, off, op, t, operand)
	if err == nil {
		e.deferred(false)
	}
	return err
}

func (e *endpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	n := t.Size()
	reg, fast := e.valid(pe, r, off, n), e.fast
	if reg == nil || !e.atomicValid(off, n, op, t) {
		var err error
		if reg, err = e.checkAtomic("fetch atomic", pe, r, off, op, t); err != nil {
			return 0, err
		}
		fast = false
	}
	if l := e.route[pe]; l >= 0 {
		if fast {
			return e.lb.FetchAtomic(l, reg.lb, off, op, t, operand, compare), nil
		}
		v, err := e.intra.FetchAtomic(l, reg.intra, off, op, t, operand, compare)
		return v, e.intraErr(err)
	}
	return e.inter.FetchAtomic(pe, reg.inter, off, op, t, operand, compare)
}

// PutSignal implements core.Endpoint: to a PE of another host through
// the inter-host transport's own where it carries one as one operation
// (CapPutSignal); everything else (a PE of this host, whose stores land in
// order, what fails the fast path's checks) as the composite's Put, Fence
// and Atomic.
func (e *endpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	if !e.interSignal {
		return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, operand)
	}
	reg, sreg := e.valid(pe, r, off, len(src)), e.valid(pe, sigR, sigOff, 8)
	if reg == nil || sreg == nil || e.route[pe] >= 0 || !e.atomicValid(sigOff, 8, op, core.Uint64) || core.CheckSignal(sigOff, op) != nil {
		return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, operand)
	}
	err := e.inter.PutSignal(pe, reg.inter, off, src, sreg.inter, sigOff, op, operand)
	if err == nil {
		e.deferred(false)
	}
	return err
}

// Fence orders both transports: a PE is served by one of them, so each
// orders what it carries to that PE.
func (e *endpoint) Fence() error {
	return errors.Join(e.intraErr(e.intra.Fence()), e.inter.Fence())
}

// Quiet waits for the intra-host transport, and for the inter-host one if
// an operation went between hosts since the last Quiet.
func (e *endpoint) Quiet() error {
	if !e.fast || e.closed.Load() {
		return e.quietSlow()
	}
	e.lb.Quiet()
	if e.serial {
		if !e.busyS {
			return nil
		}
		e.busyS = false
	} else if !e.busyInter.Load() || !e.busyInter.Swap(false) {
		return nil
	}
	return e.inter.Quiet()
}

// QuietPEs implements core.PEQuieter: the intra-host transport's Quiet
// (a memory barrier) if a PE of this host is listed, and the inter-host
// transport's quiet of the listed PEs of other hosts, which waits for
// those alone where that transport is a PEQuieter (the composite has
// CapPEQuiet then), else for all. It leaves busyInter as it is: the
// operations to other PEs may still be in flight.
func (e *endpoint) QuietPEs(pes []int) error {
	const op = "pe-quiet"
	if e.closed.Load() {
		return e.opErr(op, -1, core.ErrClosed)
	}
	var buf [8]int
	inter, intra := buf[:0], false
	for _, pe := range pes {
		if err := core.CheckPE(pe, len(e.route)); err != nil {
			return e.opErr(op, pe, err)
		}
		if e.route[pe] >= 0 {
			intra = true
		} else {
			inter = append(inter, pe)
		}
	}
	var errIntra error
	if intra {
		errIntra = e.intraErr(e.intra.Quiet())
	}
	if len(inter) == 0 {
		return errIntra
	}
	return errors.Join(errIntra, core.QuietPEs(e.inter, inter))
}

// quietSlow is Quiet through the intra-host transport's own Quiet: on a
// closed endpoint, or where that transport is not loopback.
func (e *endpoint) quietSlow() error {
	if e.closed.Load() {
		return e.opErr("quiet", -1, core.ErrClosed)
	}
	errIntra := e.intraErr(e.intra.Quiet())
	busy := false
	if e.serial {
		busy, e.busyS = e.busyS, false
	} else {
		busy = e.busyInter.Load() && e.busyInter.Swap(false)
	}
	if !busy {
		return errIntra
	}
	return errors.Join(errIntra, e.inter.Quiet())
}

// Counter brings the counter up to date with the transports' counters,
// numbering completions in issue order, and returns it.
func (e *endpoint) Counter() *core.Counter {
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	ci, cx := e.intra.Counter(), e.inter.Counter()
	// Completions first: a transport's completed count never passes its
	// issued count, so read this way the sums keep that order too.
	d := ci.Completed() + cx.Completed()
	i := ci.Issued() + cx.Issued()
	if i > e.synced {
		e.ctr.Issue(i - e.synced)
		e.synced = i
	}
	if d > e.syncedDone {
		first, n := e.syncedDone+1, d-e.syncedDone
		if err := errors.Join(e.intraErr(ci.TakeErr()), cx.TakeErr()); err != nil {
			e.ctr.Fail(first, err)
			first, n = first+1, n-1
		}
		e.ctr.Complete(first, n)
		e.syncedDone = d
	}
	return &e.ctr
}

// Close quiets and releases both endpoints.
func (e *endpoint) Close() error {
	e.closeOnce.Do(func() {
		qerr := e.Quiet()
		e.closed.Store(true)
		if errors.Is(qerr, core.ErrClosed) {
			qerr = nil
		}
		e.closeErr = errors.Join(qerr, e.intra.Close(), e.inter.Close())
		e.d.mu.Lock()
		delete(e.d.endpoints, e)
		e.d.mu.Unlock()
	})
	return e.closeErr
}
