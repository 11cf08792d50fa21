package loopback

import (
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
)

var _ core.CheckedBarrierer = (*domain)(nil)

// barrierSlice bounds one futex sleep in the barrier: how late a lost peer
// or the caller's check is noticed at worst.
const barrierSlice = time.Millisecond

// Barrier implements core.Barrierer.
func (d *domain) Barrier() error { return d.BarrierCheck(nil) }

// BarrierCheck implements core.CheckedBarrierer with a counter barrier on
// two words of PE 0's control file. Each PE reads the generation, then adds
// one to the count; the PE whose add completes the count resets it, bumps
// the generation, and wakes every PE asleep on it with one futex wake. The
// others wait for the generation to change: they spin, yield the CPU
// (with more PEs than CPUs the PEs still to arrive are runnable, and a
// yield lets them run at once), then sleep on the futex.
//
// The generation read before the add is the current one: it changes only
// once every PE has added, this one included. The count is reset before the
// generation moves, so a PE that saw the new generation and enters the
// next barrier adds to a count of zero. It is one atomic add per PE and one
// store seen by all, where barriers over RMA signal log n times or wait
// twice in a tree, each wait a hand-over of the CPU when PEs share one.
//
// Besides check, the wait ends with the bootstrap's error when a PE is lost
// or with core.ErrClosed when the domain is closed.
func (d *domain) BarrierCheck(check func() error) error {
	if d.closed.Load() {
		return d.opErr("barrier", core.ErrClosed)
	}
	if d.npes == 1 {
		return nil
	}
	c := &d.ctl[0]
	gen := atomic.LoadUint32(c.barGen)
	if atomic.AddUint32(c.barCount, 1) == uint32(d.npes) {
		atomic.StoreUint32(c.barCount, 0)
		atomic.AddUint32(c.barGen, 1)
		if atomic.LoadUint32(c.barSleepers) != 0 {
			_, _ = sys.FutexWake(c.barGen, sys.WakeAll) // cannot fail on a word we have mapped
		}
		return nil
	}
	if d.poll(c.barGen, gen) != gen {
		return nil
	}
	for futexSleep(c.barGen, c.barSleepers, gen, barrierSlice) == gen {
		if err := d.barrierErr(check); err != nil {
			return d.opErr("barrier", err)
		}
	}
	return nil
}

// barrierErr is why a barrier should stop waiting, or nil.
func (d *domain) barrierErr(check func() error) error {
	if d.closed.Load() {
		return core.ErrClosed
	}
	if err := d.boot.Err(); err != nil {
		return err
	}
	if check != nil {
		return check()
	}
	return nil
}
