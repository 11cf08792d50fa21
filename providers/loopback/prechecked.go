package loopback

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Prechecked is an endpoint's operations without their checks, for an
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
//   - r is a region of this endpoint's domain (see PrecheckedRegionOf);
//   - the n bytes at off lie inside pe's part of r, with n > 0;
//   - a value's size is 1, 2, 4 or 8; an atomic is aligned to its type's
//     size, its operation and type are valid, and Atomic's is not
//     AtomicCSwap.
//
// Each method is the body of the endpoint's own method, which runs it once
// its check has passed: the same loads and stores, counted and notified
// alike, so the endpoint's counter, Fence, Quiet and the domain's waiters
// see no difference. PutValue's and FetchAtomic's are written out in the
// endpoint's too: too large to inline, the call would cost shmem_p and
// the fetching atomics a tenth of their time (BenchmarkPutValue8,
// BenchmarkFetchAdd: 10.1 against 11.0 ns, 17.3 against 18.7).
type Prechecked struct{ e *endpoint }

// PrecheckedOf returns ep's operations without checks, if ep is a loopback
// endpoint; ok is false otherwise.
func PrecheckedOf(ep core.Endpoint) (c Prechecked, ok bool) {
	e, ok := ep.(*endpoint)
	return Prechecked{e: e}, ok
}

// PrecheckedRegion is a loopback region as Prechecked's operations take it.
type PrecheckedRegion struct{ reg *region }

// PrecheckedRegionOf returns r for Prechecked's operations, if r is a loopback
// region; ok is false otherwise.
func PrecheckedRegionOf(r core.Region) (c PrecheckedRegion, ok bool) {
	reg, ok := r.(*region)
	return PrecheckedRegion{reg: reg}, ok
}

// Put copies src into pe's part of r at off.
func (c Prechecked) Put(pe int, r PrecheckedRegion, off int, src []byte) {
	copy(r.reg.peers[pe][off:], src)
	c.e.done()
	c.e.dom.notify(pe, r.reg, off, len(src))
}

// Get copies pe's part of r at off into dst.
func (c Prechecked) Get(pe int, r PrecheckedRegion, off int, dst []byte) {
	copy(dst, r.reg.peers[pe][off:])
	c.e.done()
}

// PutValue stores the size low-order bytes of v at off in pe's part of r.
func (c Prechecked) PutValue(pe int, r PrecheckedRegion, off int, v uint64, size int) {
	mem.StoreValue(r.reg.peers[pe], off, v, size)
	c.e.done()
	c.e.dom.notify(pe, r.reg, off, size)
}

// GetValue loads size bytes at off in pe's part of r.
func (c Prechecked) GetValue(pe int, r PrecheckedRegion, off int, size int) uint64 {
	v := mem.LoadValue(r.reg.peers[pe], off, size)
	c.e.done()
	return v
}

// Atomic executes a non-fetching atomic at off in pe's part of r.
func (c Prechecked) Atomic(pe int, r PrecheckedRegion, off int, op core.AtomicOp, t core.AtomicType, operand uint64) {
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
func (c Prechecked) FetchAtomic(pe int, r PrecheckedRegion, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) uint64 {
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
func (c Prechecked) Quiet() { c.e.barrier() }
