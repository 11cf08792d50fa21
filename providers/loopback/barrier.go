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

// BarrierCheck implements core.CheckedBarrierer. When every PE has a CPU
// of its own it is a dissemination barrier, else a counter barrier (see
// each). Besides check, the wait ends with the bootstrap's error when a PE
// is lost or with core.ErrClosed when the domain is closed.
func (d *domain) BarrierCheck(check func() error) error {
	if d.closed.Load() {
		return d.opErr("barrier", core.ErrClosed)
	}
	if d.npes == 1 {
		return nil
	}
	var err error
	if d.dissemination {
		err = d.disseminate(check)
	} else {
		err = d.count(check)
	}
	if err != nil {
		return d.opErr("barrier", err)
	}
	return nil
}

// count is a counter barrier on two words of PE 0's control file. Each PE
// reads the generation, then adds one to the count; the PE whose add
// completes the count resets it, bumps the generation, and wakes every PE
// asleep on it with one futex wake. The others wait for the generation to
// change: they spin, yield the CPU (with more PEs than CPUs the PEs still
// to arrive are runnable, and a yield lets them run at once), then sleep
// on the futex.
//
// The generation read before the add is the current one: it changes only
// once every PE has added, this one included. The count is reset before the
// generation moves, so a PE that saw the new generation and enters the
// next barrier adds to a count of zero. It is one atomic add per PE and one
// store seen by all, where barriers over RMA signal log n times or wait
// twice in a tree, each wait a hand-over of the CPU when PEs share one.
func (d *domain) count(check func() error) error {
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
	return d.await(c.barGen, c.barSleepers, gen, check)
}

// disseminate is a dissemination barrier: in round r each PE stores the
// barrier's number into its flag r in the control file of the PE 2^r
// ranks above, and waits for the PE 2^r ranks below to store into its
// own; after ceil(log2 n) rounds every PE has heard from every other.
// When every PE spins on a CPU of its own this beats the counter: the
// stores of a round cross between CPUs at once, where the count's line
// travels from PE to PE, and at 2 PEs it is one store each way, at once.
//
// A flag holds the number of the last barrier its writer passed it in:
// the writer cannot be more than one barrier ahead (it leaves barrier e
// only once this PE arrived at e), nor behind (this PE left barrier e-1
// only after the writer's store of e-1). So the wait is for the flag to
// leave e-1.
func (d *domain) disseminate(check func() error) error {
	e := atomic.AddUint32(d.self.barEpoch, 1)
	for r, dist := 0, 1; dist < d.npes; r, dist = r+1, dist<<1 {
		to := d.ctl[(d.rank+dist)%d.npes].barFlags[r]
		atomic.StoreUint32(to[0], e) // an exchange: ordered before the load of sleepers
		if atomic.LoadUint32(to[1]) != 0 {
			_, _ = sys.FutexWake(to[0], sys.WakeAll) // cannot fail on a word we have mapped
		}
		own := d.self.barFlags[r]
		if atomic.LoadUint32(own[0]) != e-1 {
			continue
		}
		if err := d.await(own[0], own[1], e-1, check); err != nil {
			return err
		}
	}
	return nil
}

// await waits for word to leave old: it polls (domain.poll), then sleeps
// on the futex in slices, counted in sleepers, looking at the barrier's
// reasons to stop between slices.
func (d *domain) await(word, sleepers *uint32, old uint32, check func() error) error {
	if d.poll(word, old) != old {
		return nil
	}
	for futexSleep(word, sleepers, old, barrierSlice) == old {
		if err := d.barrierErr(check); err != nil {
			return err
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
