package shmem

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The internal part of the heap, before the user's: synchronisation words
// the collectives signal through. Every PE has the same layout, so a word's
// offset names it on every PE.
const (
	cacheLine = 64
	maxRounds = 32 // dissemination rounds: enough for 2^32 PEs

	// barrierOff: one flag per dissemination round, each on its own line.
	barrierOff = 0
	// agreeOff: two banks (by generation parity) of one slot per round;
	// a slot is a generation word and agreeWords (min, max) pairs.
	agreeOff   = barrierOff + maxRounds*cacheLine
	agreeWords = 3

	internalSize = 64 << 10
)

func init() {
	if agreeOff+2*maxRounds*cacheLine > internalSize || (1+2*agreeWords)*8 > cacheLine {
		panic("shmem: internal heap layout overflows")
	}
}

// collectives holds the state of the World's synchronisation algorithms.
// Generations only grow, so flags are never reset and back-to-back
// collectives need no extra synchronisation.
type collectives struct {
	w          *World
	rounds     int
	barrierGen uint64
	agreeGen   uint64
}

func (c *collectives) init(w *World) {
	c.w = w
	c.rounds = bits.Len(uint(w.npes - 1)) // ceil(log2 npes)
}

// barrier is a dissemination barrier (Hensgen, Finkel and Manber): in round
// k every PE signals PE me+2^k and waits for PE me-2^k, so after
// ceil(log2 n) rounds each PE has heard, directly or not, from all. It
// costs log2 n one-way signals, with no PE doing more work than another.
func (c *collectives) barrier() error {
	w := c.w
	c.barrierGen++
	gen := c.barrierGen
	for k := 0; k < c.rounds; k++ {
		to := (w.me + 1<<k) % w.npes
		off := barrierOff + k*cacheLine
		if err := w.def.ep.Atomic(to, w.heap, off, core.AtomicWrite, core.Uint64, gen); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
		if err := w.waitGE(off, gen); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
	}
	return nil
}

// agree is a dissemination all-reduce of (min, max) over a few words:
// min and max are idempotent, so the overlap that dissemination has for
// sizes that are not powers of two does no harm. It is also a barrier.
func (c *collectives) agree(v [agreeWords]uint64) (lo, hi [agreeWords]uint64, err error) {
	w := c.w
	c.agreeGen++
	gen := c.agreeGen
	lo, hi = v, v
	bank := int(gen&1) * maxRounds
	var msg [2 * agreeWords]uint64
	for k := 0; k < c.rounds; k++ {
		to := (w.me + 1<<k) % w.npes
		off := agreeOff + (bank+k)*cacheLine
		copy(msg[:agreeWords], lo[:])
		copy(msg[agreeWords:], hi[:])
		// The payload lands before the generation word that announces it.
		if err := w.def.ep.Put(to, w.heap, off+8, mem.Bytes(msg[:])); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", err)
		}
		if err := w.def.ep.Fence(); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", err)
		}
		if err := w.def.ep.Atomic(to, w.heap, off, core.AtomicWrite, core.Uint64, gen); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", err)
		}
		if err := w.waitGE(off, gen); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", err)
		}
		in := mem.Slice[uint64](w.local[off+8 : off+8+len(msg)*8])
		for i := range lo {
			lo[i] = min(lo[i], atomic.LoadUint64(&in[i]))
			hi[i] = max(hi[i], atomic.LoadUint64(&in[agreeWords+i]))
		}
	}
	return lo, hi, nil
}

// BarrierAll completes this PE's outstanding operations on the default
// context and waits until every PE has called it (shmem_barrier_all).
func (w *World) BarrierAll() error {
	if err := w.def.ep.Quiet(); err != nil {
		return fmt.Errorf("shmem: barrier_all: %w", err)
	}
	if err := w.syncAll(); err != nil {
		return fmt.Errorf("shmem: barrier_all: %w", err)
	}
	return nil
}

// SyncAll waits until every PE has called it, without completing
// outstanding operations (shmem_sync_all).
func (w *World) SyncAll() error {
	if err := w.syncAll(); err != nil {
		return fmt.Errorf("shmem: sync_all: %w", err)
	}
	return nil
}

func (w *World) syncAll() error {
	if err := w.Err(); err != nil {
		return err
	}
	return w.coll.barrier()
}
