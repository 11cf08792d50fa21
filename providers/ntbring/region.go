package ntbring

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// RegisterRegion implements core.Domain: the region is mem itself, and
// the peers' puts and atomics land in it through this host's receivers,
// as in any region. It gets no window of its own, because the device
// windows only memory registered with it from the start (ntb.Memory), so
// puts from the neighbours come through the ring too, at the cost of one
// copy here. Close leaves mem to the program untouched.
func (d *domain) RegisterRegion(m []byte) (core.Region, error) {
	const op = "register region"
	idx, err := d.agreeRegister(op, m)
	if err != nil {
		return nil, err
	}
	if d.lanes > 1 && len(m) > 0 {
		return nil, d.opErr(op, d.errNeedsHost(fmt.Sprintf("region %d", idx)))
	}
	if idx >= maxRegions {
		return nil, d.opErr(op, fmt.Errorf("region %d: at most %d regions: %w", idx, maxRegions, core.ErrInvalid))
	}
	r := &region{dom: d, idx: idx, size: len(m), mem: m, release: func() error { return nil }}
	if len(m) == 0 {
		r.mem = nil // as NewRegion's of size 0
	}
	return d.enterRegion(op, r, nil)
}

// land writes a payload at off and wakes this host's waiters. A payload of
// 2, 4 or 8 bytes at an aligned offset (a PutValue) is written with one
// store, so a reader never sees it half written.
func (r *region) land(off int, payload []byte) {
	switch n := len(payload); {
	case isValue(off, n):
		r.landValue(off, mem.LoadValue(payload, 0, n), n)
	default:
		copy(r.mem[off:], payload)
		r.dom.wake()
	}
}

// landValue writes the size bytes of v at off, which is aligned to size,
// with one store, and wakes this host's waiters.
func (r *region) landValue(off int, v uint64, size int) {
	mem.StoreValue(r.mem, off, v, size)
	r.dom.wake()
}

// isValue reports whether n bytes at off are a value that one store
// writes whole: 1, 2, 4 or 8 bytes at an offset aligned to their size.
func isValue(off, n int) bool {
	return (n == 1 || n == 2 || n == 4 || n == 8) && off%n == 0
}

// atomic executes a at off with sync/atomic, so it is atomic with this
// host's own atomics on the word, and returns the old value. The caller
// has checked the bounds and the alignment.
func (r *region) atomic(off int, a amoRequest) uint64 {
	old := mem.Atomic(r.mem, off, a.op, a.typ, a.operand, a.compare)
	if a.op != core.AtomicRead {
		r.dom.wake()
	}
	return old
}

// agreeRegister opens the registration of m, this PE's part: it takes
// the next region number and agrees on it and on the size with every PE.
func (d *domain) agreeRegister(op string, m []byte) (int, error) {
	if d.closed.Load() {
		return 0, d.opErr(op, core.ErrClosed)
	}
	d.mu.Lock()
	idx := d.nregions
	d.nregions++
	d.mu.Unlock()
	if err := core.AgreeRegister(d.boot, idx, m, maxRegionSize); err != nil {
		return 0, d.opErr(op, err)
	}
	return idx, nil
}
