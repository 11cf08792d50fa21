package shmem

import (
	"math/bits"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// A group is the PEs of a collective and the words they signal through:
// a team's, in its slot of the internal heap, or an active set's (the 1.4
// collectives), in the pSync array the program passes. Each algorithm
// both kinds use is written once, against a group: the combining tree,
// dissemination, the binomial broadcast, the direct and spread gathers,
// the prefix sum. A team adds strategies only a team can have (the
// domain's barrier, the host-aware shapes, the World's bulk and gather
// areas); an active set equal to the World runs on the World's team.
//
// Every word is a counter: a PE signals another by adding to one of its
// words, and waits for the count it expects. Adds commute, so signals of a
// faster PE's next collective are never lost or mistaken for this one's.
// On a team a word counts forever: the team keeps what each word has
// counted (Team.seen), and a wait is for that plus what it expects. On an
// active set the waiter takes what it expected off again, so every word a
// call consumes is back at SyncValue when the call returns, as the spec
// asks of pSync, whatever set used the pSync before.
type group struct {
	w     *World
	team  *Team // nil: an active set
	n, me int
	as    ActiveSet // an active set's PEs
	op    string    // an active set's routine, for the wait report

	syncR core.Region // where the words are
	sync  int         // their offset in syncR
	local []byte      // this PE's words, from sync on

	// mapped is pushes' answer once it was asked, which a team's group
	// keeps: 0 not yet, 1 every member maps every other, -1 not.
	mapped int8
}

// The words of a group, by what they count. A team has a line for each,
// but gwFrom's, which one wait reads together; an active set maps them
// onto its pSync (psIndex), where two collectives that never run in one
// call share a word.
type gword int

const (
	gwArrive  gword         = iota // tree: arrivals from children
	gwRelease                      // tree: releases from the parent
	gwData                         // binomial broadcast: the data has landed
	gwStage                        // a team's staged gathers: parts landed, by parity: gwStage+p
	gwRound   = gwStage + 2        // dissemination round k: gwRound+k
)

const (
	gwScan  = gwRound + maxRounds // prefix sum round k: gwScan+k
	gwFrom  = gwScan + maxRounds  // direct gathers: one word per sender rank
	gwWords = gwFrom + maxDirect

	// groupWordsSize is the bytes of a team slot's words.
	groupWordsSize = int(gwFrom)*cacheLine + (maxDirect*8+cacheLine-1)&^(cacheLine-1)
)

// psIndex is the pSync word of a group word.
func psIndex(g gword) int {
	switch {
	case g == gwArrive, g == gwData, g == gwStage, g == gwStage+1:
		return 0 // the staged gathers' words are a team's alone
	case g == gwRelease:
		return 1
	case g < gwScan:
		return int(g - gwRound)
	case g < gwFrom:
		return psScan + int(g-gwScan)
	}
	return psFrom + int(g-gwFrom)
}

// teamIndex is a word's offset in a team slot's words.
func teamIndex(g gword) int {
	if g < gwFrom {
		return int(g) * cacheLine
	}
	return int(gwFrom)*cacheLine + int(g-gwFrom)*8
}

// woff is word g's offset from the group's first word.
func (g *group) woff(word gword) int {
	if g.team != nil {
		return teamIndex(word)
	}
	return 8 * psIndex(word)
}

// word is this PE's word g.
func (g *group) word(word gword) *uint64 { return mem.Word64(g.local, g.woff(word)) }

// among is the group's members, for its waits.
func (g *group) among() among {
	if g.team != nil {
		return g.team.among()
	}
	return among{op: g.op, as: g.as}
}

// pe is the World PE of rank r.
func (g *group) pe(r int) int {
	if g.team != nil {
		return g.team.members[r]
	}
	return g.as.PE(r)
}

// signal adds v to word on rank r.
func (g *group) signal(r int, word gword, v uint64) error {
	return g.w.coll.ep.Atomic(g.pe(r), g.syncR, g.sync+g.woff(word), core.AtomicAdd, core.Uint64, v)
}

// putSignal puts data, if any, at off in dr on rank r, then adds v to
// word there, which announces it: in one operation where the endpoint
// carries both as one (core.CapPutSignal).
func (g *group) putSignal(r int, dr core.Region, off int, data []byte, word gword, v uint64) error {
	return g.w.coll.ep.PutSignal(g.pe(r), dr, off, data, g.syncR, g.sync+g.woff(word), core.AtomicAdd, v)
}

// await waits for k more signals on word.
func (g *group) await(word gword, k uint64) error { return g.awaitOn(false, word, k) }

// awaitHost is await for a word only PEs of this host add to (see
// waitHostGE).
func (g *group) awaitHost(word gword, k uint64) error { return g.awaitOn(true, word, k) }

// awaitOn is await, through waitHostIn if host. The waits are called
// directly, not through a func value: cond then stays on the stack.
func (g *group) awaitOn(host bool, word gword, k uint64) error {
	p, m := g.word(word), g.among()
	want := k
	if t := g.team; t != nil {
		t.seen[word] += k
		want = t.seen[word]
	}
	cond := func() bool { return atomic.LoadUint64(p) >= want }
	var err error
	if host {
		err = g.w.waitHostIn(m, g.syncR, g.sync+g.woff(word), 8, cond)
	} else {
		err = g.w.waitIn(m, g.syncR, g.sync+g.woff(word), 8, cond)
	}
	if err != nil || g.team != nil {
		return err
	}
	return g.take(word, k)
}

// awaitValue waits for one signal on word, a value of at least 1 added by
// one sender, and returns it.
func (g *group) awaitValue(word gword) (uint64, error) {
	p := g.word(word)
	base := uint64(0)
	if g.team != nil {
		base = g.team.seen[word]
	}
	if err := g.w.waitIn(g.among(), g.syncR, g.sync+g.woff(word), 8, func() bool { return atomic.LoadUint64(p) > base }); err != nil {
		return 0, err
	}
	v := atomic.LoadUint64(p) - base
	if g.team != nil {
		g.team.seen[word] += v
		return v, nil
	}
	return v, g.take(word, v)
}

// take takes v off this PE's word of an active set, complete on return:
// the next wait on the word reads it here. The subtraction goes through
// the provider, so it is atomic with the adds other members' signals
// make; a non-fetching atomic is complete only after a quiet, and one a
// provider still has in flight (a plugin pipelines them) would leave the
// count just consumed in place for that wait to take as the next signal.
// A fetching atomic is complete once it returns its value.
func (g *group) take(word gword, v uint64) error {
	ep := g.w.coll.ep
	off := g.sync + g.woff(word)
	if g.w.info.Caps&core.CapFetchAtomic == 0 {
		if err := ep.Atomic(g.w.me, g.syncR, off, core.AtomicAdd, core.Uint64, -v); err != nil {
			return err
		}
		return ep.Quiet()
	}
	_, err := ep.FetchAtomic(g.w.me, g.syncR, off, core.AtomicAdd, core.Uint64, -v, 0)
	return err
}

// chunk is the most bytes one step of the tree carries.
func (g *group) chunk() int {
	if g.team != nil {
		return treeChunk
	}
	return g.w.coll.scratchChunk
}

// treeFits reports whether a collective of n bytes goes through the
// tree: on groups of two, the direct exchange of dissemination or
// recursive doubling takes one step where the tree takes two.
func (g *group) treeFits(n int) bool { return g.n > 2 && n <= g.chunk() }

// upOff is where, in the heap of its parent, the child of World PE pe,
// at place in the parent's list, puts what it sends up the tree: a
// team's slot has a place for each child; an active set, whose members
// may meet in other sets' trees at any time, has a place for each World
// PE in the scratch area after the heap, so a child's next set never
// writes where its last one's parent has yet to read.
func (g *group) upOff(place, pe int) int {
	if t := g.team; t != nil {
		return t.base() + upOff + place*treeChunk
	}
	return g.w.coll.scratch + pe*2*g.w.coll.scratchChunk
}

// downOff is where, in a child's heap, World PE pe, its parent, puts
// what the tree sends down.
func (g *group) downOff(pe int) int {
	if t := g.team; t != nil {
		return t.base() + releaseOff
	}
	return g.w.coll.scratch + (2*pe+1)*g.w.coll.scratchChunk
}

// links is this PE's place in the tree rooted at root.
func (g *group) links(root int) treeLinks {
	if g.team != nil {
		return g.team.links(root)
	}
	return flatLinks(g.n, g.me, root)
}

// barrier waits for every member: through the tree, or on teams of two
// by dissemination, whose exchange is one step. An active set keeps to
// the tree, where nobody signals a member before that member has
// arrived: a program may reuse a pSync for another set as soon as its
// own part of the last set is done, while another member of the new set
// still uses it in the old one, and a signal dissemination sent that
// member at once would count there.
func (g *group) barrier() error {
	if g.team == nil || g.n > 2 {
		return tree[byte](g, 0, nil, nil, false)
	}
	return g.dissemination()
}

// dissemination is the dissemination barrier (Hensgen, Finkel and Manber):
// in round k every PE signals rank me+2^k and waits for rank me-2^k, so
// after ceil(log2 n) rounds each PE has heard, directly or not, from all.
// It costs log2 n one-way signals, with no PE doing more work than
// another. A round's word has one sender.
func (g *group) dissemination() error {
	for k := 0; 1<<k < g.n; k++ {
		if err := g.signal((g.me+1<<k)%g.n, gwRound+gword(k), 1); err != nil {
			return err
		}
		if err := g.await(gwRound+gword(k), 1); err != nil {
			return err
		}
	}
	return nil
}

// spread runs put towards every member, starting after this PE so that
// not everyone writes to the same member at once, then completes the puts
// and waits for everyone's.
func (g *group) spread(put func(r int) error) error {
	var first error
	for i := 0; i < g.n; i++ {
		if err := put((g.me + 1 + i) % g.n); err != nil && first == nil {
			first = err
		}
	}
	if err := g.w.coll.ep.Quiet(); err != nil && first == nil {
		first = err
	}
	if err := g.barrier(); err != nil {
		return err
	}
	return first
}

// gather runs put towards every member and returns once every member's
// puts have landed here: directly (see direct) in groups of up to
// maxDirect members, else by spread.
func (g *group) gather(put func(r int) error, held *[maxDirect]uint64) error {
	if g.n <= maxDirect {
		return g.direct(put, held)
	}
	return g.spread(put)
}

// The direct gathers. Word gwFrom+s counts what rank s told this PE in
// this call: in a collect, first its count of elements plus one (so that
// zero says "not yet"), sent only to the ranks above it, which need it to
// place their own parts; then, in both, dataLanded once its part has been
// put and fenced. Each word has one sender, whose signals a fence keeps
// in order, so a member waits for no one but the senders themselves: one
// wait for the counts below it and one for the parts, where a barrier
// after quieted puts took a round trip and two waits more, each a wake-up
// of a sleeping PE, which over a network is what a collective costs.
//
// A faster member may already be in the next collective of the group,
// but only one call ahead, having received this member's part; its next
// signals to this member come after its current ones and stay in the word
// for that call: a count is below dataLanded, so it never passes for one,
// and a part is never announced before the same sender's part of this
// call.
const dataLanded = 1 << 48

// countsBelow tells the ranks above this PE its count v and returns the
// sum of the counts of the ranks below it; held[s] is what rank s's word
// holds of its count.
func (g *group) countsBelow(v uint64, held *[maxDirect]uint64) (uint64, error) {
	for r := g.me + 1; r < g.n; r++ {
		if err := g.signal(r, gwFrom+gword(g.me), v+1); err != nil {
			return 0, err
		}
	}
	if err := g.waitFrom(0, g.me, func(int) uint64 { return 1 }); err != nil {
		return 0, err
	}
	var at uint64
	for s := 0; s < g.me; s++ {
		// The sender's part may have landed too: its count is what lies
		// below dataLanded. Nothing of its next call can be here before
		// this PE's part is announced, so it is read now.
		held[s] = (atomic.LoadUint64(g.word(gwFrom+gword(s))) - g.seenOf(gwFrom+gword(s))) % dataLanded
		at += held[s] - 1
	}
	return at, nil
}

// seenOf is what a team's word has counted, ever; 0 on an active set.
func (g *group) seenOf(word gword) uint64 {
	if g.team != nil {
		return g.team.seen[word]
	}
	return 0
}

// direct runs put towards every other member, starting after this PE so
// that not everyone writes to the same member at once, and towards this
// PE; fences; tells every other member its part has landed; then waits
// until every other member's has landed here and takes this call's
// signals: dataLanded, plus held[s], what the word of rank s held before
// (its count, in a collect).
func (g *group) direct(put func(r int) error, held *[maxDirect]uint64) error {
	ep := g.w.coll.ep
	var first error
	for i := 0; i < g.n; i++ {
		if err := put((g.me + 1 + i) % g.n); err != nil && first == nil {
			first = err
		}
	}
	if err := ep.Fence(); err != nil {
		return err
	}
	for i := 1; i < g.n; i++ {
		if err := g.signal((g.me+i)%g.n, gwFrom+gword(g.me), dataLanded); err != nil {
			return err
		}
	}
	for s := 0; s < g.n; s++ {
		held[s] += dataLanded
	}
	if err := g.waitFrom(0, g.n, func(s int) uint64 { return held[s] }); err != nil {
		return err
	}
	for s := 0; s < g.n; s++ {
		if s == g.me {
			continue
		}
		if t := g.team; t != nil {
			t.seen[gwFrom+gword(s)] += held[s]
		} else if err := g.take(gwFrom+gword(s), held[s]); err != nil {
			return err
		}
	}
	return first
}

// waitFrom waits until word gwFrom+s has counted at least need(s) more
// for every rank s in [lo, hi) but this PE's: one wait over the words,
// which checks each sender once it is no longer waiting for the one
// before.
func (g *group) waitFrom(lo, hi int, need func(s int) uint64) error {
	if lo >= hi || (hi-lo == 1 && lo == g.me) {
		return nil
	}
	s := lo
	first := g.woff(gwFrom + gword(lo))
	return g.w.waitIn(g.among(), g.syncR, g.sync+first, g.woff(gwFrom+gword(hi-1))+8-first, func() bool {
		for ; s < hi; s++ {
			w := gwFrom + gword(s)
			if s != g.me && atomic.LoadUint64(g.word(w))-g.seenOf(w) < need(s) {
				return false
			}
		}
		return true
	})
}

// prefixSum returns the sum of v over the ranks below this PE's, by the
// dissemination scan (scanRounds). A round's word has one sender, which
// adds the running sum plus one, so that zero still says "not yet".
func (g *group) prefixSum(v uint64) (uint64, error) {
	sum := v
	err := scanRounds(g.n, g.me, func(to, k int) error {
		return g.signal(to, gwScan+gword(k), sum+1)
	}, func(k int) error {
		in, err := g.awaitValue(gwScan + gword(k))
		sum += in - 1
		return err
	})
	if err != nil {
		return 0, err
	}
	return sum - v, nil
}

// binomialSend forwards dest, which relative rank rel of a binomial tree of
// cnt ranks holds, to its subtrees, the largest first: rank r hears from r
// minus its lowest set bit and forwards to r+2^j for every 2^j below that
// bit. dest is at off in dr on every member; each child hears on gwData.
func (g *group) binomialSend(over, rel, cnt, root int, dest []byte, dr core.Region, off int) error {
	low := cnt // the root's "lowest bit": it forwards to every subtree
	if rel > 0 {
		low = rel & -rel
	}
	for mask := (1 << bits.Len(uint(cnt-1))) >> 1; mask > 0; mask >>= 1 {
		if mask >= low || rel+mask >= cnt {
			continue
		}
		child := g.binomialRank(over, rel+mask, root)
		if err := g.putSignal(child, dr, off, dest, gwData, 1); err != nil {
			return err
		}
	}
	return nil
}

// binomialRank is the rank at relative rank rel of a tree over, rooted at
// root.
func (g *group) binomialRank(over, rel, root int) int {
	if g.team != nil {
		return g.team.binomialRank(over, rel, root)
	}
	return (rel + root) % g.n
}

// BroadcastPushMax and BroadcastPushMembers bound the broadcasts that go
// by push (group.push): at most that many bytes, among two to that many
// members. Every member of a call must take the same path, so a second
// implementation of the same protocol, the C library's on mapped memory,
// pushes within the same bounds.
const (
	BroadcastPushMax     = 64 << 10
	BroadcastPushMembers = maxDirect
)

// pushFits reports whether a broadcast of n bytes goes by push: where
// every member maps every other's memory (they share a host), a put is a
// copy the root makes at once, so the root puts to every member itself
// and nobody forwards; a member then waits for the root alone, where down
// a tree it waits for every PE between them to be scheduled, on a host
// whose PEs outnumber its CPUs a wake-up each. A team spread over hosts
// keeps its host-aware shape, the root's copies stop paying beyond
// BroadcastPushMax bytes, and a team gives each root a word, of which it
// has BroadcastPushMembers.
func (g *group) pushFits(n int) bool { return n <= BroadcastPushMax && g.pushes() }

// pushes reports whether the group's broadcasts of up to
// BroadcastPushMax bytes go by push. A team's members and shape are fixed
// when it is made, so its group looks at the mappings once, not at every
// collective.
func (g *group) pushes() bool {
	if g.mapped == 0 {
		g.mapped = -1
		if g.allMapped() {
			g.mapped = 1
		}
	}
	return g.mapped > 0
}

// allMapped reports whether the group is two to BroadcastPushMembers
// members, of no team spread over hosts, each of which maps every other.
func (g *group) allMapped() bool {
	if g.w.direct == nil || g.n < 2 || g.n > BroadcastPushMembers || g.team != nil && g.team.shape != nil {
		return false
	}
	// Mapping is mutual (the PEs of a host), so every member finds the
	// same answer.
	for r := range g.n {
		if g.w.direct.PeerBytes(g.pe(r), g.w.heap) == nil {
			return false
		}
	}
	return true
}

// push is the broadcast of pushFits: the root copies source into dest,
// if own (the team form writes the root's dest; the active set's leaves
// it), and puts source into every other member's dest, at off in dr,
// announced by one on word there; every other member waits for it.
//
// The word must have no sender but the root. A broadcast's root returns
// as soon as it has put, so it may be several broadcasts ahead of a
// member, each from a root of its own: on a team each root signals on
// its own word (gwFrom+root), whose signals come in the root's order, so
// a member counts this call's alone; gathers count on the same words by
// the same rule (see direct). An active set's broadcast signals on pSync
// word 0, which the program may not reuse before every member has left
// this call.
func (g *group) push(root int, word gword, dest, source []byte, dr core.Region, off int, own bool) error {
	if g.me != root {
		return g.await(word, 1)
	}
	if own {
		copy(dest, source)
	}
	for i := 1; i < g.n; i++ {
		if err := g.putSignal((root+i)%g.n, dr, off, source, word, 1); err != nil {
			return err
		}
	}
	return nil
}
