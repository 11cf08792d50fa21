package loopback

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/providers/provkit"
)

// endpoint issues RMA as loads and stores into the mappings of its domain.
// Every operation is complete when its call returns.
//
// Each operation ends by counting itself. Endpoint.Counter and Close move
// the count into the core.Counter (Issue and Complete together, since
// nothing is ever pending), which keeps the Counter's two adds and its
// waiter check off the data path. How it counts depends on two things:
//
//   - Where the job fences symmetrically (see domain.notify), the count of
//     a put or get is an atomic add on ops, a word on the endpoint's own
//     cache line. That one uncontended read-modify-write is also a full
//     memory barrier between a put's stores and its load of the target's
//     waiter count, so it never misses a waiter, and it orders each
//     operation's memory effects before the next one's on every
//     architecture (Info's OrderPutPut).
//   - Where the job fences asymmetrically, the hardware keeps stores in
//     order and sleeping waiters pay for the handshake, so the count needs
//     no fence: on an endpoint that one goroutine uses at a time
//     (Serialized or Private) it is a plain increment of solo, a fraction
//     of an atomic add. An endpoint shared by goroutines still adds to ops
//     atomically, the cheapest correct count there.
//
// Atomics need no fence besides themselves, only the count, so on a
// Serialized or Private endpoint they increment solo either way. Fence and
// Quiet issue a full barrier, for the operations that had none.
type endpoint struct {
	provkit.Endpoint // the provider's name and NPEs for the checks, and closed

	dom    *domain
	serial bool // Serialized or Private: solo may count atomics
	plain  bool // serial and the job fences asymmetrically: solo counts everything

	// The fields above are read by every operation; ops and solo are
	// written by every operation. Padding keeps them on different cache
	// lines, so goroutines sharing an endpoint do not also share misses on
	// the read-only part.
	_ [64]byte

	ops  atomic.Uint64 // operations not yet moved into counter
	solo uint64        // more of them, counted by count on a serial endpoint

	counter core.Counter
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

// target is the check of every operation's fast path: r as this domain's
// region if an access of n > 0 bytes at off in pe's part of it is valid,
// else nil. A nil sends the operation down its slow path (rma, amo or
// value), which says what is wrong, or does nothing for n == 0. It is
// small enough to inline, so a valid operation makes no call to be checked.
func (e *endpoint) target(pe int, r core.Region, off, n int) *region {
	reg, ok := r.(*region)
	if !ok || reg.dom != e.dom || !core.AccessValid(pe, e.NPEs, off, n, reg.size) || e.Closed() {
		return nil
	}
	return reg
}

// rma validates an access of n bytes at off in pe's part of r and returns
// those bytes as mapped here.
func (e *endpoint) rma(op string, pe int, r core.Region, off, n int) ([]byte, *region, error) {
	reg, size := e.own(r)
	if err := e.CheckRMA(op, pe, r, size, off, n); err != nil {
		return nil, nil, err
	}
	return reg.peers[pe][off : off+n], reg, nil
}

// amo validates an atomic and returns the region; mem.Atomic indexes
// pe's whole part of it by off.
func (e *endpoint) amo(opName string, pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType) (*region, error) {
	reg, size := e.own(r)
	return reg, e.CheckAtomic(opName, pe, r, size, off, op, t, &fullAtomics)
}

// atomicValid is the rest of an atomic's fast-path check, after target:
// the operation is aligned and one this provider executes.
// n is t's size, which the caller has at hand.
func atomicValid(off, n int, op core.AtomicOp, t core.AtomicType) bool {
	return off&(n-1) == 0 && fullAtomics.Supports(op, t)
}

// atomic64 executes the atomics shmem issues most, 64-bit integer add and
// compare-swap, inline; for any other (ok false, memory untouched) the
// caller falls back to mem.Atomic, two calls deeper.
func atomic64(b []byte, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (old uint64, ok bool) {
	if t != core.Int64 && t != core.Uint64 {
		return 0, false
	}
	p := mem.Word64(b, off)
	switch op {
	case core.AtomicAdd:
		return atomic.AddUint64(p, operand) - operand, true
	case core.AtomicCSwap:
		if atomic.CompareAndSwapUint64(p, compare, operand) {
			return compare, true
		}
		// Failed: the value that made it fail, unless it changed back
		// to compare meanwhile, when mem.Atomic tries again.
		old = atomic.LoadUint64(p)
		return old, old != compare
	}
	return 0, false
}

// value validates a PutValue or GetValue and returns the region; mem
// indexes pe's whole part of it by off.
func (e *endpoint) value(op string, pe int, r core.Region, off, size int) (*region, error) {
	reg, regionSize := e.own(r)
	return reg, e.CheckValue(op, pe, r, regionSize, off, size)
}

// done counts a put or get, with a fence where one is needed; see endpoint.
func (e *endpoint) done() {
	if e.plain {
		e.solo++
	} else {
		e.ops.Add(1)
	}
}

// count counts an atomic, which needs no fence besides itself.
func (e *endpoint) count() {
	if e.serial {
		e.solo++
	} else {
		e.ops.Add(1)
	}
}

// publish moves the operations counted since the last publish into the
// Counter.
func (e *endpoint) publish() {
	n := e.ops.Swap(0)
	if e.serial {
		n, e.solo = n+e.solo, 0
	}
	if n != 0 {
		e.counter.Complete(e.counter.Issue(n), n)
	}
}

func (e *endpoint) put(op string, pe int, r core.Region, off int, src []byte) error {
	reg := e.target(pe, r, off, len(src))
	if reg == nil {
		_, _, err := e.rma(op, pe, r, off, len(src))
		return err
	}
	Prechecked{e}.Put(pe, PrecheckedRegion{reg}, off, src)
	return nil
}

func (e *endpoint) get(op string, pe int, r core.Region, off int, dst []byte) error {
	reg := e.target(pe, r, off, len(dst))
	if reg == nil {
		_, _, err := e.rma(op, pe, r, off, len(dst))
		return err
	}
	Prechecked{e}.Get(pe, PrecheckedRegion{reg}, off, dst)
	return nil
}

// valueSize reports whether PutValue and GetValue move size bytes.
func valueSize(size int) bool { return size&(size-1) == 0 && uint(size-1) < 8 }

// Put implements core.Endpoint: a copy into pe's memory.
func (e *endpoint) Put(pe int, r core.Region, off int, src []byte) error {
	return e.put("put", pe, r, off, src)
}

// PutValue implements core.Endpoint: one store into pe's memory, so an
// aligned value is never seen half written.
func (e *endpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	reg := e.target(pe, r, off, size)
	if reg == nil || !valueSize(size) {
		var err error
		if reg, err = e.value("put-value", pe, r, off, size); err != nil {
			return err
		}
	}
	// Prechecked.PutValue's body, written out: the call to it would cost
	// a tenth of shmem_p's time here (it is too large to inline).
	mem.StoreValue(reg.peers[pe], off, v, size)
	e.done()
	e.dom.notify(pe, reg, off, size)
	return nil
}

// GetValue implements core.Endpoint: one load from pe's memory.
func (e *endpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	reg := e.target(pe, r, off, size)
	if reg == nil || !valueSize(size) {
		var err error
		if reg, err = e.value("get-value", pe, r, off, size); err != nil {
			return 0, err
		}
	}
	return Prechecked{e}.GetValue(pe, PrecheckedRegion{reg}, off, size), nil
}

// PutNBI implements core.Endpoint; it completes before it returns, like Put.
func (e *endpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	return e.put("put-nbi", pe, r, off, src)
}

// Get implements core.Endpoint: a copy out of pe's memory.
func (e *endpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	return e.get("get", pe, r, off, dst)
}

// GetNBI implements core.Endpoint; it completes before it returns, like Get.
func (e *endpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	return e.get("get-nbi", pe, r, off, dst)
}

// Atomic implements core.Endpoint with sync/atomic on pe's memory as mapped
// here, so it is atomic with pe's own sync/atomic on the same word.
//
// AtomicCSwap is refused: without a compare operand it has no meaning, and
// compare-and-swap against an implied zero would be a surprise.
func (e *endpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	n := t.Size()
	reg := e.target(pe, r, off, n)
	if reg == nil || !atomicValid(off, n, op, t) {
		var err error
		if reg, err = e.amo("atomic", pe, r, off, op, t); err != nil {
			return err
		}
	}
	if err := e.CheckNonFetching("atomic", pe, op, t); err != nil {
		return err
	}
	Prechecked{e}.Atomic(pe, PrecheckedRegion{reg}, off, op, t, operand)
	return nil
}

// PutSignal implements core.Endpoint: the put and the signal are stores
// to mapped memory, in order: Put, Fence and Atomic are the one operation.
func (e *endpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, operand)
}

// FetchAtomic implements core.Endpoint like Atomic, returning the old value.
func (e *endpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	n := t.Size()
	reg := e.target(pe, r, off, n)
	if reg == nil || !atomicValid(off, n, op, t) {
		var err error
		if reg, err = e.amo("fetch-atomic", pe, r, off, op, t); err != nil {
			return 0, err
		}
	}
	// Prechecked.FetchAtomic's body, written out as PutValue's is.
	old, ok := atomic64(reg.peers[pe], off, op, t, operand, compare)
	if !ok {
		old = mem.Atomic(reg.peers[pe], off, op, t, operand, compare)
	}
	e.count()
	if op != core.AtomicRead {
		e.dom.notify(pe, reg, off, n)
	}
	return old, nil
}

// Fence implements core.Endpoint. Operations counted with a fence (see
// endpoint) already take effect in order; for those on a plain endpoint
// it issues a full memory barrier, so the order holds whatever the
// hardware.
func (e *endpoint) Fence() error {
	if err := e.CheckOpen("fence"); err != nil {
		return err
	}
	e.barrier()
	return nil
}

// Quiet implements core.Endpoint. Every operation is complete when its
// call returns, so there is nothing to wait for; on a plain endpoint a
// full memory barrier makes the stores of the operations before it visible
// before any load after it, as they would be had each fenced.
func (e *endpoint) Quiet() error {
	if err := e.CheckOpen("quiet"); err != nil {
		return err
	}
	e.barrier()
	return nil
}

// QuietPEs implements core.PEQuieter as Quiet: every operation, to
// whichever PE, is complete when its call returns, so a quiet of some
// PEs waits for nobody either.
func (e *endpoint) QuietPEs(pes []int) error {
	if err := e.CheckPEs("pe-quiet", pes); err != nil {
		return err
	}
	e.barrier()
	return nil
}

// barrier is a full memory barrier on a plain endpoint, whose operations
// have none of their own: an atomic read-modify-write that changes
// nothing. Other endpoints' operations each ended with one.
func (e *endpoint) barrier() {
	if e.plain {
		e.ops.Add(0)
	}
}

// Counter implements core.Endpoint; it brings the counter up to date
// first, so its numbers include every operation issued before the call.
func (e *endpoint) Counter() *core.Counter {
	e.publish()
	return &e.counter
}

// Close implements core.Endpoint. It is idempotent; later operations fail
// with ErrClosed.
func (e *endpoint) Close() error {
	if !e.MarkClosed() {
		return nil
	}
	e.publish()
	d := e.dom
	d.mu.Lock()
	delete(d.endpoints, e) // a no-op on a nil map, after the domain closed
	d.mu.Unlock()
	return nil
}
