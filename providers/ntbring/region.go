package ntbring

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// land writes a payload at off and wakes this host's waiters. A payload of
// 2, 4 or 8 bytes at an aligned offset (a PutValue) is written with one
// store, so a reader never sees it half written.
func (r *region) land(off int, payload []byte) {
	switch n := len(payload); {
	case (n == 1 || n == 2 || n == 4 || n == 8) && off%n == 0:
		mem.StoreValue(r.mem, off, mem.LoadValue(payload, 0, n), n)
	default:
		copy(r.mem[off:], payload)
	}
	r.dom.wake()
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
