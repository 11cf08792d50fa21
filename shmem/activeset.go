package shmem

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The active-set collectives are OpenSHMEM 1.4's collectives, deprecated in
// 1.5 but still part of it: instead of a team they name their PEs by an
// ActiveSet, and instead of internal state they synchronise through pSync,
// a symmetric array of int64 the program provides, and reduce through
// pWrk, a symmetric work array. They exist so that programs written for
// 1.4, and a C interface over this package, can run unchanged; new code
// should use teams.
//
// Every word of pSync is a counter: a PE signals another by adding to one
// of its words, and the receiver waits for the count it expects and then
// subtracts it. Adds commute, so a signal that belongs to the next call
// (from a faster PE) is never lost or mistaken for this one's, and a
// barrier may be called back to back with the same pSync. Every word a
// call consumes on a PE is back at SyncValue when the call returns there;
// signals of a later call by a faster member may already have arrived.
//
// As the spec requires, pSync must hold SyncValue in every word on every
// member before its first use, and a pSync used by one collective may be
// used by the next only after every member has left the previous one: the
// collectives that end with a barrier (barrier, collect, fcollect,
// alltoall(s)) and the reductions guarantee that themselves; after a
// broadcast, the program synchronises before reusing its pSync or dest,
// for instance with a barrier on a second pSync, as 1.4 programs do.
// Broadcast, collect and alltoall may write a member's dest as soon as any
// member has entered the call, so a dest a member may still be reading
// must not be the target of the next collective before a synchronisation.

// SyncValue is the value every word of a pSync array holds between
// collectives (SHMEM_SYNC_VALUE).
const SyncValue int64 = 0

// The number of pSync words each active-set collective needs: a pSync
// array holds at least this many int64 (SHMEM_*_SYNC_SIZE). SyncSize is
// the largest, enough for any of them.
const (
	// BarrierSyncSize: the arrival and release counters of the tree.
	BarrierSyncSize = 2
	// BcastSyncSize: the counter that says the data has arrived.
	BcastSyncSize = 1
	// CollectSyncSize (collect and fcollect): the barrier's counters, then
	// one word per member for sets of up to maxDirect members, where each
	// member signals the others directly (see activeset_coll.go); larger
	// sets use the barrier and one word per round of a scan. It is
	// SHMEM_COLLECT_SYNC_SIZE, which C programs allocate anyway.
	CollectSyncSize = 64
	// ReduceSyncSize: the arrival and release counters of the tree.
	ReduceSyncSize = 2
	// AlltoallSyncSize and AlltoallsSyncSize: the barrier's counters.
	AlltoallSyncSize  = BarrierSyncSize
	AlltoallsSyncSize = BarrierSyncSize

	SyncSize = max(BarrierSyncSize, BcastSyncSize, CollectSyncSize, ReduceSyncSize, AlltoallSyncSize, AlltoallsSyncSize)

	// ReduceMinWrkdataSize is the least number of elements a pWrk array
	// holds (SHMEM_REDUCE_MIN_WRKDATA_SIZE); a reduction of nreduce
	// elements needs max(nreduce/2+1, ReduceMinWrkdataSize).
	ReduceMinWrkdataSize = 64
)

// pSync word indices.
const (
	psArrive  = 0 // tree: children arrived, ever minus consumed
	psRelease = 1 // tree: releases from the parent
	psBcast   = 0 // broadcast: data arrived
	psScan    = BarrierSyncSize
	psFrom    = BarrierSyncSize // collect, fcollect: word psFrom+s counts rank s's signals
)

// ActiveSet names the PEs of an active-set collective: Size PEs, from
// Start, every 2^LogStride (PE_start, logPE_stride and PE_size in C). A
// member's rank in the set is its position in that sequence.
type ActiveSet struct {
	Start, LogStride, Size int
}

// PE returns the World PE of rank r of the set.
func (as ActiveSet) PE(r int) int { return as.Start + r<<as.LogStride }

// Rank returns the rank in the set of World PE pe, or -1 if it is not a
// member.
func (as ActiveSet) Rank(pe int) int {
	d := pe - as.Start
	switch {
	case d < 0 || as.LogStride < 0 || as.Size < 1:
		return -1
	case d == 0:
		return 0
	case as.LogStride > 62 || d&(1<<as.LogStride-1) != 0:
		return -1
	}
	if r := d >> as.LogStride; r < as.Size {
		return r
	}
	return -1
}

// check validates the set on a World of npes PEs, with PE me calling.
func (as ActiveSet) check(op string, npes, me int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("shmem: %s: active set (start %d, log stride %d, size %d): %s: %w",
			op, as.Start, as.LogStride, as.Size, fmt.Sprintf(format, args...), core.ErrInvalid)
	}
	switch {
	case as.Size < 1:
		return bad("size must be at least 1")
	case as.LogStride < 0:
		return bad("log stride must not be negative")
	case as.Start < 0 || as.Start >= npes:
		return bad("start is not a PE (0 to %d)", npes-1)
	case as.LogStride > 62 && as.Size > 1, as.Size-1 > (npes-1-as.Start)>>as.LogStride:
		return bad("its last member is past the last PE %d", npes-1)
	case as.Rank(me) < 0:
		return bad("the calling PE %d is not a member", me)
	}
	return nil
}

// asCall is one PE's view of one active-set collective. pSync may lie
// in the heap or in registered static data (C programs declare it
// static), so the call carries pSync's region and this PE's words, not
// just an offset in the heap.
type asCall struct {
	w     *World
	as    ActiveSet
	me    int // rank in the set
	n     int // members
	syncR core.Region
	sync  int     // offset of pSync[0] in syncR
	words []int64 // this PE's pSync
}

// begin validates the set and pSync (at least words int64, symmetric).
func (w *World) begin(op string, as ActiveSet, pSync []int64, words int) (asCall, error) {
	if err := w.Err(); err != nil {
		return asCall{}, err
	}
	if err := as.check(op, w.npes, w.me); err != nil {
		return asCall{}, err
	}
	if len(pSync) < words {
		return asCall{}, fmt.Errorf("shmem: %s: pSync holds %d words, %d are needed: %w", op, len(pSync), words, core.ErrInvalid)
	}
	r, off, err := w.sym(op, mem.Addr(pSync), words*8)
	if err != nil {
		// Name the array only here: building the name allocates.
		return asCall{}, w.addrError(op+" pSync", mem.Addr(pSync), words*8)
	}
	if off%8 != 0 {
		return asCall{}, fmt.Errorf("shmem: %s: pSync is not aligned to 8 bytes: %w", op, core.ErrInvalid)
	}
	return asCall{w: w, as: as, me: as.Rank(w.me), n: as.Size, syncR: r, sync: off, words: pSync[:words]}, nil
}

func (c *asCall) word(i int) int { return c.sync + 8*i }

// add adds v to pSync[i] on the member of rank r.
func (c *asCall) add(r, i int, v int64) error {
	return c.w.coll.ep.Atomic(c.as.PE(r), c.syncR, c.word(i), core.AtomicAdd, core.Int64, uint64(v))
}

// consume waits until this PE's pSync[i] counts v, then takes v off it.
// The subtraction goes through the provider, so it is atomic with the adds
// other members' signals make, and it is complete when consume returns,
// because the next wait on the word reads it here: a non-fetching atomic
// is complete only after a quiet, and one a provider still has in flight
// (a plugin pipelines them) would leave the count just consumed in place
// for that wait to take as the next signal. A fetching atomic is complete
// once it returns its value, and waits for nothing else.
func (c *asCall) consume(i int, v int64) error {
	if err := c.waitGE(i, v); err != nil {
		return err
	}
	return c.take(i, v)
}

// take takes v off this PE's pSync[i], complete on return, as consume
// does once its wait is over.
func (c *asCall) take(i int, v int64) error {
	ep := c.w.coll.ep
	if c.w.info.Caps&core.CapFetchAtomic == 0 {
		if err := ep.Atomic(c.w.me, c.syncR, c.word(i), core.AtomicAdd, core.Int64, uint64(-v)); err != nil {
			return err
		}
		return ep.Quiet()
	}
	_, err := ep.FetchAtomic(c.w.me, c.syncR, c.word(i), core.AtomicAdd, core.Int64, uint64(-v), 0)
	return err
}

// waitGE waits until this PE's pSync[i] reaches v.
func (c *asCall) waitGE(i int, v int64) error {
	p := &c.words[i]
	return c.w.waitIn(c.syncR, c.word(i), 8, func() bool { return atomic.LoadInt64(p) >= v })
}

// treeKids returns the first child rank and the number of children of
// this PE in the arity-ary heap over the set's ranks, rooted at rank 0.
func (c *asCall) treeKids(arity int) (first, kids int) {
	first = arity*c.me + 1
	return first, max(0, min(c.n, first+arity)-first)
}

// barrier waits for every member through the combining tree: each PE
// waits for its children, reports to its parent and waits for the release
// that comes back down. Two waits at most, however many PEs, which is what
// keeps it fast where PEs outnumber cores. A child arrives at the next
// barrier only after its parent released it, which the parent did after
// consuming this barrier's arrivals, so the counters serve back-to-back
// barriers on the same pSync.
func (c *asCall) barrier() error {
	first, kids := c.treeKids(treeArity)
	if kids > 0 {
		if err := c.consume(psArrive, int64(kids)); err != nil {
			return err
		}
	}
	if c.me > 0 {
		if err := c.add((c.me-1)/treeArity, psArrive, 1); err != nil {
			return err
		}
		if err := c.consume(psRelease, 1); err != nil {
			return err
		}
	}
	for k := first; k < first+kids; k++ {
		if err := c.add(k, psRelease, 1); err != nil {
			return err
		}
	}
	return nil
}

// BarrierActiveSet completes this PE's outstanding operations on the
// default context and waits until every member of as has called it
// (shmem_barrier). pSync holds at least BarrierSyncSize words; the same
// pSync may serve consecutive barriers over the same set.
func (w *World) BarrierActiveSet(as ActiveSet, pSync []int64) error {
	const op = "barrier"
	c, err := w.begin(op, as, pSync, BarrierSyncSize)
	if err != nil {
		return err
	}
	if err := w.def.ep.Quiet(); err != nil {
		return wrap(op, err)
	}
	return wrap(op, c.barrier())
}

// finish completes this PE's collective puts and waits, through the tree
// barrier, until every member's have landed.
func (c *asCall) finish() error {
	if err := c.w.coll.ep.Quiet(); err != nil {
		return err
	}
	return c.barrier()
}
