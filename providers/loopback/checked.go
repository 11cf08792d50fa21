package loopback

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Checked is an endpoint's operations without their checks, for an
// endpoint in front of loopback's (providers/hybrid's composite) that
// makes the same checks itself before choosing loopback for an operation:
// one check per operation instead of one in each endpoint, so an
// operation between PEs of one host costs through the composite what it
// costs through loopback alone. It is not part of core's contract.
//
// Every method's caller guarantees, and nothing here checks again:
//
//   - the endpoint is open (the caller closes it only after its own
//     endpoint is marked closed, and checks that mark first);
//   - pe is one of this domain's PEs, numbered as this domain numbers them;
//   - r is a region of this endpoint's domain (see CheckedRegionOf);
//   - the n bytes at off lie inside pe's part of r, with n > 0;
//   - a value's size is 1, 2, 4 or 8; an atomic is aligned to its type's
//     size, its operation and type are valid, and Atomic's is not
//     AtomicCSwap.
//
// Each method is what the endpoint's own method does once its check has
// passed: the same loads and stores, counted and notified alike, so the
// endpoint's counter, Fence, Quiet and the domain's waiters see no
// difference.
type Checked struct{ e *endpoint }

// CheckedOf returns ep's operations without checks, if ep is a loopback
// endpoint; ok is false otherwise.
func CheckedOf(ep core.Endpoint) (c Checked, ok bool) {
	e, ok := ep.(*endpoint)
	return Checked{e: e}, ok
}

// CheckedRegion is a loopback region as Checked's operations take it.
type CheckedRegion struct{ reg *region }

// CheckedRegionOf returns r for Checked's operations, if r is a loopback
// region; ok is false otherwise.
func CheckedRegionOf(r core.Region) (c CheckedRegion, ok bool) {
	reg, ok := r.(*region)
	return CheckedRegion{reg: reg}, ok
}

// Put copies src into pe's part of r at off.
func (c Checked) Put(pe int, r CheckedRegion, off int, src []byte) {
	copy(r.reg.peers[pe][off:], src)
	c.e.done()
	c.e.dom.notify(pe, r.reg, off, len(src))
}

// Get copies pe's part of r at off into dst.
func (c Checked) Get(pe int, r CheckedRegion, off int, dst []byte) {
	copy(dst, r.reg.peers[pe][off:])
	c.e.done()
}

// PutValue stores the size low-order bytes of v at off in pe's part of r.
func (c Checked) PutValue(pe int, r CheckedRegion, off int, v uint64, size int) {
	mem.StoreValue(r.reg.peers[pe], off, v, size)
	c.e.done()
	c.e.dom.notify(pe, r.reg, off, size)
}

// GetValue loads size bytes at off in pe's part of r.
func (c Checked) GetValue(pe int, r CheckedRegion, off int, size int) uint64 {
	v := mem.LoadValue(r.reg.peers[pe], off, size)
	c.e.done()
	return v
}

// Atomic executes a non-fetching atomic at off in pe's part of r.
func (c Checked) Atomic(pe int, r CheckedRegion, off int, op core.AtomicOp, t core.AtomicType, operand uint64) {
	b := r.reg.peers[pe]
	if _, ok := atomic64(b, off, op, t, operand, 0); !ok {
		mem.Atomic(b, off, op, t, operand, 0)
	}
	c.e.count()
	if op != core.AtomicRead {
		c.e.dom.notify(pe, r.reg, off, t.Size())
	}
}

// FetchAtomic executes an atomic at off in pe's part of r and returns the
// value it held before.
func (c Checked) FetchAtomic(pe int, r CheckedRegion, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) uint64 {
	b := r.reg.peers[pe]
	old, ok := atomic64(b, off, op, t, operand, compare)
	if !ok {
		old = mem.Atomic(b, off, op, t, operand, compare)
	}
	c.e.count()
	if op != core.AtomicRead {
		c.e.dom.notify(pe, r.reg, off, t.Size())
	}
	return old
}

// Quiet is the endpoint's Quiet (and Fence) on an open endpoint: a full
// memory barrier where its operations have none of their own.
func (c Checked) Quiet() { c.e.barrier() }
