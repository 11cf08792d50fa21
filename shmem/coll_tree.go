package shmem

import (
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
// through the tree (group.treeFits).
func (t *Team) treeFits(n int) bool { return t.g.treeFits(n) }

// tree runs the combining tree of group g rooted at rank root (see
// links: on a team spread over hosts with several PEs on some, a tree of
// hosts with a tree inside each). On the way up, if combine is not nil,
// each PE combines its children's acc into its own, in child order, and
// sends the result to its parent; if down, the root's acc comes back down
// into every PE's acc, so all hold the same bits. With an empty acc it is
// a barrier. acc holds at most g.chunk() bytes.
//
// A child writes into its parent's place (upOff) only after the release
// of the previous step reached it, which the root sent after every PE had
// consumed what the previous step wrote; so one copy of each buffer is
// enough, whatever the root of either step.
func tree[T Elem](g *group, root int, acc []T, combine func(acc, in []T), down bool) error {
	var tr treeTrace
	tr.mark(traceStart)
	w := g.w
	b := mem.Bytes(acc)
	l := g.links(root)
	if l.nkids > 0 {
		if err := g.await(gwArrive, uint64(l.nkids)); err != nil {
			return err
		}
		tr.mark(traceKids)
		if combine != nil {
			for _, k := range l.kids[:l.nkids] {
				off := g.upOff(k.place, g.pe(k.rank))
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
		if err := g.putSignal(l.parent.rank, w.heap, g.upOff(l.parent.place, w.me), up, gwArrive, 1); err != nil {
			return err
		}
		tr.mark(traceUp)
		if err := g.await(gwRelease, 1); err != nil {
			return err
		}
		tr.mark(traceRelease)
		if down {
			off := g.downOff(g.pe(l.parent.rank))
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
		if err := g.putSignal(k.rank, w.heap, g.downOff(w.me), data, gwRelease, 1); err != nil {
			return err
		}
		if i < traceMarks-traceDown {
			tr.mark(traceDown + i)
		}
	}
	tr.done(g)
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
