package shmem

import (
	"fmt"
	"math/bits"

	"github.com/goshmem/goshmem/core"
)

// barrier waits for every member: on the World's team of more than two
// PEs through the domain's own barrier where it has one (core.Barrierer);
// on a team spread over hosts with several PEs on some, by host
// (hostBarrier); else through the combining tree;
// on teams of two by dissemination, whose direct exchange is one step.
//
// A barrier ended by a peer that left because of a global exit reports
// the global exit: a domain's barrier notices the loss of a peer before
// its check looks for the exit, and a signal to a PE that is gone fails.
func (t *Team) barrier() error {
	if b := t.domainBarrier(); b != nil {
		return t.w.exitOr(b())
	}
	if t.hostReduceFits() {
		return t.w.exitOr(hostBarrier(t))
	}
	if t.treeFits(0) {
		return t.w.exitOr(tree[byte](t, 0, nil, nil, false))
	}
	return t.w.exitOr(t.dissemination())
}

// domainBarrier returns the domain's barrier if the team's barrier is it:
// on the World's team of more than two PEs, when the domain has one.
func (t *Team) domainBarrier() func() error {
	if t != t.w.coll.world || len(t.members) <= 2 {
		return nil
	}
	return t.w.coll.domBarrier
}

// dissemination is the dissemination barrier (Hensgen, Finkel and Manber):
// in round k every PE signals rank me+2^k and waits for rank me-2^k, so
// after ceil(log2 n) rounds each PE has heard, directly or not, from all.
// It costs log2 n one-way signals, with no PE doing more work than another.
//
// A round's word on a PE gets generation gen from one sender, then gen+1
// at the next barrier, with no reply between the two that would order
// them. Where the provider may execute atomics to one PE out of issue
// order (Info.Order lacks core.OrderAtomicAtomic), a fence first makes
// every signal of the last barrier land before this one's: an older
// generation landing last would take the word back, or survive the
// clearing of a destroyed team's slot, and its waiter would wait forever.
func (t *Team) dissemination() error {
	if t.w.info.Order&core.OrderAtomicAtomic == 0 {
		if err := t.w.coll.ep.Fence(); err != nil {
			return err
		}
	}
	n := len(t.members)
	t.syncGen++
	gen := t.syncGen
	rounds := bits.Len(uint(n - 1))
	for k := 0; k < rounds; k++ {
		off := t.base() + syncFlagsOff + k*cacheLine
		if err := t.signal((t.me+1<<k)%n, off, gen); err != nil {
			return err
		}
		if err := t.w.waitGE(off, gen); err != nil {
			return err
		}
	}
	return nil
}

// Sync waits until every member of the team has called it, without
// completing outstanding operations (shmem_team_sync).
func (t *Team) Sync() error {
	if err := t.check("team sync"); err != nil {
		return err
	}
	if err := t.barrier(); err != nil {
		return fmt.Errorf("shmem: team sync: %w", err)
	}
	return nil
}
