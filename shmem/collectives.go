package shmem

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The internal part of the heap, before the user's: the words and buffers
// the collectives signal through. Every PE has the same layout, so a word's
// offset names it on every PE.
const (
	cacheLine = 64
	maxRounds = 32 // dissemination rounds: enough for 2^32 PEs

	// agreeOff: two banks (by generation parity) of one slot per round;
	// a slot is a generation word and agreeWords (min, max) pairs.
	agreeOff   = 0
	agreeWords = 3

	// teamsOff: one slot per team this PE may belong to at once (see
	// team_slot.go). Team creation agrees on a slot free on every member.
	teamsOff     = agreeOff + 2*maxRounds*cacheLine
	maxTeams     = 128
	teamSlotSize = 32 << 10

	// bulkOff: the World team's area for large reductions (see
	// coll_bulk.go), larger than a team slot's message banks, and for its
	// gather banks.
	bulkOff  = teamsOff + maxTeams*teamSlotSize
	bulkSize = 1<<20 + 2*gatherBank

	internalSize = bulkOff + bulkSize
)

// After the heap and the exit word (exit.go) comes the active sets'
// scratch area: an up and a down place for each World PE, where the tree
// of an active-set collective carries its payloads (group.upOff). Its
// places are scratchChunk bytes: a treeChunk up to 512 PEs, less in
// larger jobs so the area stays near 1 MiB, and never below two lines.
func scratchChunkFor(npes int) int {
	return min(treeChunk, max((1<<20)/(2*npes)&^(cacheLine-1), 2*cacheLine))
}

// tailSize is what the heap region holds past the user's heap.
func tailSize(npes int) int { return exitSize(npes) + 2*npes*scratchChunkFor(npes) }

func init() {
	if (1+2*agreeWords)*8 > cacheLine || slotBanksOff >= teamSlotSize/2 {
		panic("shmem: internal heap layout overflows")
	}
}

// collectives holds the World's state for its collectives: the generation
// of its agreement, the endpoint collectives issue their signals and data
// on (so they neither wait for nor fence the user's operations), and the
// table of team slots this PE uses.
type collectives struct {
	w        *World
	rounds   int
	agreeGen uint64
	ep       core.Endpoint
	layout   slotLayout

	teamMu sync.Mutex
	slots  [maxTeams]*Team // nil where free
	world  *Team
	shared *Team

	// hostOf is the host index of every World PE (see coll_hosts.go);
	// hostAware says the teams spread over hosts use host-aware trees.
	hostOf    []int
	hostAware bool
	hostMap   []int // tests: the host of every PE, posed for the collectives

	bulkGen uint64 // pieces the World's large reductions have moved, ever

	// scratch is the heap offset of the active sets' scratch area, and
	// scratchChunk the size of each of its places.
	scratch, scratchChunk int

	// domBarrier is the domain's own barrier, which the World's team
	// uses instead of its RMA algorithms; nil if the domain has none.
	domBarrier func() error

	// leftSeen is a barrier of every PE's first sight of a PE that
	// finalized (World.BarrierWait): like barrierWatch, only the PE's one
	// barrier of every PE at a time touches it.
	leftSeen sighting

	// barrierWatch is the wait of a barrier of every PE that waits
	// outside shmem's own waits, for the wait report (World.BarrierWait).
	barrierWatch waitWatch
}

// init sets up the collectives of a World whose heap exists; hostID
// decides which PEs make up TeamShared, and
// waiting is the job's waiting policy on this host. It is collective.
func (c *collectives) init(w *World, hostID string, waiting core.Waiting) error {
	c.w = w
	c.rounds = bits.Len(uint(w.npes - 1)) // ceil(log2 npes)
	c.layout = newSlotLayout(w.npes)
	c.scratch = internalSize + w.heapSize + exitSize(w.npes)
	c.scratchChunk = scratchChunkFor(w.npes)
	ep, err := w.dom.NewEndpoint(core.EndpointOptions{})
	if err != nil {
		return err
	}
	c.ep = ep
	switch b := w.dom.(type) {
	case core.CheckedBarrierer:
		// One closure each, not one per barrier.
		check := func() error { return w.BarrierWait(c.world.op, 0) }
		c.domBarrier = func() error {
			err := b.BarrierCheck(check)
			if c.barrierWatch.published {
				w.BarrierDone()
			}
			return err
		}
	case core.Barrierer:
		c.domBarrier = b.Barrier
	}
	if err := c.initTeams(hostID); err != nil {
		return err
	}
	w.spins = waiting.Polls
	// Spinning long pays only if the store can land meanwhile: a peer
	// that maps this PE's memory stores itself, but where this process's
	// progress goroutines apply peers' writes (tcp), one runtime
	// processor (what oshrun gives each PE of a full host) is the one the
	// spinner holds.
	if _, mapped := w.dom.(core.DirectAccess); !mapped && runtime.GOMAXPROCS(0) == 1 {
		w.spins = min(w.spins, core.SharedPolls)
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
		if err := c.ep.Put(to, w.heap, off+8, mem.Bytes(msg[:])); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", w.exitOr(err))
		}
		if err := c.ep.Fence(); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", w.exitOr(err))
		}
		if err := c.ep.Atomic(to, w.heap, off, core.AtomicWrite, core.Uint64, gen); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", w.exitOr(err))
		}
		if err := w.waitGE(w.amongAll(), off, gen); err != nil {
			return lo, hi, fmt.Errorf("agreement: %w", w.exitOr(err))
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
		return fmt.Errorf("shmem: barrier_all: %w", w.exitOr(err))
	}
	if err := w.syncAll("barrier_all"); err != nil {
		return fmt.Errorf("shmem: barrier_all: %w", err)
	}
	return nil
}

// SyncAll waits until every PE has called it, without completing
// outstanding operations (shmem_sync_all).
func (w *World) SyncAll() error {
	if err := w.syncAll("sync_all"); err != nil {
		return fmt.Errorf("shmem: sync_all: %w", err)
	}
	return nil
}

func (w *World) syncAll(op string) error {
	if err := w.Err(); err != nil {
		return err
	}
	w.coll.world.op = op
	return w.coll.world.barrier()
}
