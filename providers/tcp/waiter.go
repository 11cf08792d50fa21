package tcp

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/provkit"
)

// waiters lets a PE sleep until a peer's put or atomic lands in memory it
// watches (core.LocalWaiter). The progress goroutines, which apply every
// remote write, call notify; a watched write bumps seq and wakes sleepers.
type waiters struct {
	armed atomic.Int32 // armed waiters
	any   atomic.Int32 // armed waiters watching all memory
	seq   atomic.Uint32
	ev    core.Event
	// also is told of every change (core.WaitNotifier).
	also provkit.WaitNotify

	mu    sync.Mutex
	used  uint32 // bit i: slot i in use
	slots [watchSlots]struct{ lo, hi atomic.Uint64 }
}

const (
	// watchSlots is how many ranges can be watched at once; more waiters
	// than that watch everything.
	watchSlots = 16
	// watchOffBits is the width of the offset in a watch key; the region
	// index sits above it.
	watchOffBits = 40
)

func watchKey(region uint32, off uint64) uint64 { return uint64(region)<<watchOffBits | off }

// notify is called after n bytes landed at off in region; it says whether
// it woke the waiters. It starts with an atomic read-modify-write, a full
// barrier between the stores that landed and the load of the waiter
// count: a waiter counts itself and then checks its condition, so one of
// the two sees the other (the same handshake as loopback's).
func (d *domain) notify(region uint32, off, n uint64) bool {
	w := &d.waiters
	if w.armed.Add(0) == 0 {
		return false
	}
	if w.any.Load() == 0 {
		lo, hi := watchKey(region, off), watchKey(region, off+n)
		hit := false
		for i := range w.slots {
			s := &w.slots[i]
			if h := s.hi.Load(); h != 0 && lo < h && s.lo.Load() < hi {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	w.seq.Add(1)
	w.also.Tell()
	w.ev.Notify()
	return true
}

var _ core.WaitNotifier = (*domain)(nil)

// SetWaitNotify implements core.WaitNotifier: notify calls f at every
// change it wakes the waiters for.
func (d *domain) SetWaitNotify(f func()) { d.waiters.also.Set(f) }

// WaitArm implements core.LocalWaiter: it publishes the watched range of
// this PE's part of r in a free slot (or watches everything when r is not
// this domain's, n is 0 or no slot is free), then counts the waiter.
func (d *domain) WaitArm(r core.Region, off, n int) (uint32, int) {
	w := &d.waiters
	if d.closed.Load() {
		return w.seq.Load(), -1
	}
	slot := -1
	if reg, ok := r.(*region); ok && reg.d == d && n > 0 && off >= 0 && off <= reg.size-n {
		w.mu.Lock()
		if free := ^w.used & (1<<watchSlots - 1); free != 0 {
			slot = bits.TrailingZeros32(free)
			w.used |= 1 << slot
		}
		w.mu.Unlock()
		if slot >= 0 {
			w.slots[slot].lo.Store(watchKey(reg.idx, uint64(off)))
			w.slots[slot].hi.Store(watchKey(reg.idx, uint64(off+n)))
		}
	}
	if slot < 0 {
		w.any.Add(1)
	}
	w.armed.Add(1)
	return w.seq.Load(), slot
}

// WaitDisarm implements core.LocalWaiter.
func (d *domain) WaitDisarm(slot int) {
	w := &d.waiters
	w.armed.Add(-1)
	if slot < 0 {
		w.any.Add(-1)
		return
	}
	w.slots[slot].hi.Store(0)
	w.slots[slot].lo.Store(0)
	w.mu.Lock()
	w.used &^= 1 << slot
	w.mu.Unlock()
}

// WaitChange implements core.LocalWaiter: it returns once seq has moved
// on, or after about max. It blocks at once until a progress goroutine
// notifies: what it waits for is applied by this process's progress
// goroutines, which a waiter that spins or yields keeps from running where
// there is one runtime processor per PE, and a yield from a goroutine
// locked to its thread, as a C program's calls are, hands the processor to
// another thread and back, two wake-ups each, which on a loaded host made
// every collective take milliseconds. The caller has spun already.
func (d *domain) WaitChange(seq uint32, max time.Duration) uint32 {
	w := &d.waiters
	if max <= 0 || d.closed.Load() {
		return w.seq.Load()
	}
	_ = w.ev.Block(func() bool { return w.seq.Load() != seq }, max, nil) // timed out or changed: the caller re-checks alike
	return w.seq.Load()
}
