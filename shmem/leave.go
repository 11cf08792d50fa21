package shmem

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Finalize is collective, but no collective may take it for another: a
// PE that finalizes while others wait in a barrier must not complete that
// barrier for them. So Finalize waits on words of its own, the finalize
// bitmap after the exit word: each PE sets its bit on every PE, once its
// operations are complete, and waits until its own bitmap is full. The
// bits stay set, and a wait in a collective that looks for a way out
// (World.waitIn with the collective's members) reads them: a member that
// finalized will never do its part, so the wait fails with a
// *FinalizedError naming it.
//
// A member that finalized may have done its part of the very collective
// the waiter is in: it completed a barrier, every PE having arrived, and
// the release is still on its way to the waiter through a live member.
// What a collective still owes then comes from live members already in it,
// so the waiter gives it finalizeGrace before it fails.
const finalizeGrace = time.Second

// leftSize is the bytes of the finalize bitmap of a job of npes PEs, in
// whole cache lines.
func leftSize(npes int) int { return (8*((npes+63)/64) + cacheLine - 1) &^ (cacheLine - 1) }

// leftOff is the heap offset of the finalize bitmap.
func (w *World) leftOff() int { return internalSize + w.heapSize + 2*cacheLine }

// FinalizedError is what a wait in a collective returns when a member of
// the collective finalized instead of joining it.
type FinalizedError struct {
	PE     int // the member that finalized
	Waiter int // the PE that waited for it
}

func (e *FinalizedError) Error() string {
	return fmt.Sprintf("PE %d finalized while PE %d waited for it in this collective", e.PE, e.Waiter)
}

func (e *FinalizedError) Unwrap() error { return core.ErrPeerLost }

// leave is Finalize's collective part: this PE's operations are complete
// (Finalize quiets every context first); it tells every PE it finalized
// and waits until every PE has told it the same.
func (w *World) leave() error {
	if err := w.Err(); err != nil {
		return err
	}
	ep := w.coll.ep
	// The collectives' own signals land before the bit that says no more
	// will come.
	if err := ep.Quiet(); err != nil {
		return w.exitOr(err)
	}
	off := w.leftOff() + 8*(w.me/64)
	bit := uint64(1) << (w.me % 64)
	for pe := range w.npes {
		if err := ep.Atomic(pe, w.heap, off, core.AtomicOr, core.Uint64, bit); err != nil {
			return w.exitOr(err)
		}
	}
	if err := ep.Quiet(); err != nil {
		return w.exitOr(err)
	}
	words := (w.npes + 63) / 64
	full := func() bool {
		n := 0
		for i := range words {
			n += bits.OnesCount64(atomic.LoadUint64(mem.Word64(w.local, w.leftOff()+8*i)))
		}
		return n == w.npes
	}
	return w.exitOr(w.waitIn(among{op: "finalize"}, w.heap, w.leftOff(), 8*words, full))
}

// leftAmong returns the lowest member of m that finalized, if one did.
func (w *World) leftAmong(m among) (int, bool) {
	for i := range (w.npes + 63) / 64 {
		v := atomic.LoadUint64(mem.Word64(w.local, w.leftOff()+8*i))
		for v != 0 {
			pe := 64*i + bits.TrailingZeros64(v)
			v &= v - 1
			if pe != w.me && m.member(pe) {
				return pe, true
			}
		}
	}
	return 0, false
}

// among is what a wait waits in: the routine, for the wait report, and
// the members of the collective it is in, a team's or an active set's,
// or none (no team, an empty set) for a wait that is no collective's,
// which a finalized PE does not end.
type among struct {
	op   string
	team *Team
	as   ActiveSet
}

// amongAll is the members of a collective of every PE.
func (w *World) amongAll() among { return w.coll.world.among() }

// among is the team's members, waiting in its collective op (Team.check).
func (t *Team) among() among { return among{op: t.op, team: t} }

func (m among) collective() bool { return m.team != nil || m.as.Size > 0 }

func (m among) member(pe int) bool {
	if m.team != nil {
		return m.team.rankOf(pe) >= 0
	}
	return m.as.Rank(pe) >= 0
}

// sighting is a wait's first sight of a member that finalized: which, and
// when. The error names that member: the other waiters finalize too once
// their own waits fail, and may then be the lowest with its bit set.
type sighting struct {
	at time.Time // zero: none yet
	pe int
}

// leftErr is what ends a wait among m since a member finalized: nothing
// until the wait has seen one for finalizeGrace, then a *FinalizedError.
func (w *World) leftErr(m among, seen *sighting) error {
	if !m.collective() {
		return nil
	}
	if seen.at.IsZero() {
		pe, ok := w.leftAmong(m)
		if !ok {
			return nil
		}
		*seen = sighting{at: time.Now(), pe: pe}
	}
	if time.Since(seen.at) < finalizeGrace {
		return nil
	}
	return &FinalizedError{PE: seen.pe, Waiter: w.me}
}
