package shmem

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The combining tree: ranks, relative to a root, form a treeArity-ary heap
// (the children of r are treeArity*r+1 to treeArity*r+treeArity). A PE
// waits for its children, reports to its parent, and waits once more for
// the release that comes back down: at most two waits, however many PEs,
// where dissemination and recursive doubling wait log2 n times. On a host
// with more PEs than cores every wait may cost a sleep and a wake-up, so
// this is what keeps barriers and small reductions fast there; depth is
// log n to the base treeArity, and no PE serves more than treeArity others.
const (
	treeArity = 8
	// treeChunk is the largest payload that travels through the tree;
	// larger reductions and broadcasts take the bandwidth-minded paths.
	treeChunk = 1024
)

// treeFits reports whether a collective of n bytes on the team goes
// through the tree: on teams of two, the direct exchange of dissemination
// or recursive doubling takes one step where the tree takes two.
func (t *Team) treeFits(n int) bool { return len(t.members) > 2 && n <= treeChunk }

// tree runs the combining tree rooted at team rank root (see links: on a
// team spread over hosts with several PEs on some, a tree of hosts with a
// tree inside each). On the way up,
// if combine is not nil, each PE combines its children's acc into its own,
// in child order, and sends the result to its parent; if down, the root's
// acc comes back down into every PE's acc, so all hold the same bits. With
// an empty acc it is a barrier.
//
// A child writes into its parent's slot only after the release of the
// previous generation reached it, which the root sent after every PE had
// consumed what the previous generation wrote; so one copy of each buffer
// is enough, whatever the root of either generation.
func tree[T Elem](t *Team, root int, acc []T, combine func(acc, in []T), down bool) error {
	var tr treeTrace
	tr.mark(traceStart)
	t.treeGen++
	gen := t.treeGen
	w, base := t.w, t.base()
	b := mem.Bytes(acc)
	l := t.links(root)
	if l.nkids > 0 {
		t.arrivals += uint64(l.nkids)
		if err := w.waitGE(base+arriveOff, t.arrivals); err != nil {
			return err
		}
		tr.mark(traceKids)
		if combine != nil {
			for _, k := range l.kids[:l.nkids] {
				off := base + upOff + k.place*treeChunk
				combine(acc, mem.Slice[T](w.local[off:off+len(b)]))
			}
		}
	}
	if l.parent.rank >= 0 {
		// The payload lands before the count that announces it.
		var up []byte
		if combine != nil {
			up = b
		}
		if err := t.putSignal(l.parent.rank, base+upOff+l.parent.place*treeChunk, up, base+arriveOff, core.AtomicAdd, 1); err != nil {
			return err
		}
		tr.mark(traceUp)
		if err := w.waitGE(base+releaseOff, gen); err != nil {
			return err
		}
		tr.mark(traceRelease)
		if down {
			off := base + releaseOff + cacheLine
			copy(b, w.local[off:off+len(b)])
		}
	}
	// Releases go to the last children first: in the host-aware shape
	// those are the leaders of other hosts, whose release has the
	// farthest to go.
	for i := l.nkids - 1; i >= 0; i-- {
		k := l.kids[i]
		var data []byte
		if down {
			data = b
		}
		if err := t.putSignal(k.rank, base+releaseOff+cacheLine, data, base+releaseOff, core.AtomicWrite, gen); err != nil {
			return err
		}
		if i < traceMarks-traceDown {
			tr.mark(traceDown + i)
		}
	}
	tr.done(t)
	return nil
}

// The phases of a tree step that treeTrace marks: its start; its
// children's arrival; its report to its parent sent; its release seen;
// then the release to kid i sent (traceDown+i, for the first kids;
// releases go last kid first).
const (
	traceStart = iota
	traceKids
	traceUp
	traceRelease
	traceDown
	traceMarks = traceDown + 4
)
