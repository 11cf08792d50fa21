package shmem

import (
	"fmt"
)

// barrier waits for every member: on the World's team of more than two
// PEs through the domain's own barrier where it has one (core.Barrierer);
// on a team spread over hosts with several PEs on some, by host
// (hostBarrier); else as a group does (the combining tree, or
// dissemination on teams of two).
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
	return t.w.exitOr(t.g.barrier())
}

// domainBarrier returns the domain's barrier if the team's barrier is it:
// on the World's team of more than two PEs, when the domain has one.
func (t *Team) domainBarrier() func() error {
	if t != t.w.coll.world || len(t.members) <= 2 {
		return nil
	}
	return t.w.coll.domBarrier
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
