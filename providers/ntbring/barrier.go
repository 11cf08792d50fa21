package ntbring

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// barrier implements protocol: the seeds' ring barrier.
func (p *seed) barrier(abort func() error) error {
	return doorbellBarrier(p.d.rank, p.links[ntb.Right].port, p.links[ntb.Right].peer, &p.bar, abort)
}

// doorbellBarrier is the seeds' ring barrier for host rank, whose Right
// port (facing host peer) is right. Host 0 sends BARRIER_START to its
// right and waits for it to come round from its left; every other host
// waits for START from its left and passes it on. Then host 0 sends
// BARRIER_END the same way round, and each host leaves once END has
// reached it and it has passed it on. Host 0 leaves on sending END: every
// host has entered by then. bar counts the signals from the left.
func doorbellBarrier(rank int, right ntb.Port, peer int, bar *ringBarrier, abort func() error) error {
	ring := func(bit int) error {
		if err := right.PeerDBSet(1 << bit); err != nil {
			return portError(ntb.Right, peer, "ring barrier doorbell", err)
		}
		return nil
	}
	gen := bar.enter()
	if rank == 0 {
		if err := ring(dbBarrierStart); err != nil {
			return err
		}
		if err := bar.wait(gen, &bar.starts, abort); err != nil {
			return err
		}
		return ring(dbBarrierEnd)
	}
	if err := bar.wait(gen, &bar.starts, abort); err != nil {
		return err
	}
	if err := ring(dbBarrierStart); err != nil {
		return err
	}
	if err := bar.wait(gen, &bar.ends, abort); err != nil {
		return err
	}
	return ring(dbBarrierEnd)
}

// ringBarrier counts the barrier signals that reached this host from its
// left. Each signal of one barrier reaches a host once, and the next
// barrier's only after this host has left the previous one; a doorbell bit
// that merges two rings of one signal therefore cannot happen, and a count
// per kind is all the state there is.
type ringBarrier struct {
	gen          uint64 // barriers entered, by the (single) caller
	starts, ends atomic.Uint64
	ev           core.Event
}

func (b *ringBarrier) enter() uint64 {
	b.gen++
	return b.gen
}

func (b *ringBarrier) signal(start, end bool) {
	if start {
		b.starts.Add(1)
	}
	if end {
		b.ends.Add(1)
	}
	if start || end {
		b.ev.Notify()
	}
}

// wait blocks until counter reaches gen. A barrier may legitimately wait
// as long as the slowest host computes, so there is no timeout: only
// abort (a lost peer, the caller's check) ends it early.
func (b *ringBarrier) wait(gen uint64, counter *atomic.Uint64, abort func() error) error {
	return b.ev.Wait(func() bool { return counter.Load() >= gen }, 0, abort)
}
