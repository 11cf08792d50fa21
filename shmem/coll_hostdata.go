package shmem

import (
	"math"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Host-aware data movement, for data larger than the tree carries, on a
// team with a host shape (coll_hosts.go): what crosses between hosts goes
// to one PE per host, which passes it on inside its host, where a put is
// a copy into memory both PEs map.
//
//   - Broadcast: a binomial tree over the hosts' leaders (the root leads
//     its host), then a binomial tree inside each host from its leader.
//     Each host receives the data once, where a binomial tree over all
//     ranks sends it to every PE of another host.
//   - FCollect and Collect: every PE puts its block into every PE of its
//     host and into the leader of every other host; each leader, once it
//     holds all blocks, puts the other hosts' blocks into the PEs of its
//     own. Every block crosses to each other host once instead of once
//     per PE there. Counts replace the closing barrier: every PE adds one
//     to heardOff on each PE it put to, after a fence, and waits for as
//     many as it is owed.
//
// Alltoall moves a different block between every pair, so each byte
// crosses between hosts once whatever the route; it keeps its direct puts,
// and its barriers are the host-aware ones.
//
// Reductions larger than the tree carries go by host too
// (coll_hostreduce.go): each leader combines its host's data out of its
// peers' memory, sends that partial once to every other leader, combines
// the hosts' partials and hands the result back to its host.

// leaderOf is the team rank leading team-host g for a collective rooted
// at root: the root on its host, the host's first rank on the others.
func (s *hostShape) leaderOf(g, root int) int {
	if g == s.hostOf[root] {
		return root
	}
	return s.hosts[g][0]
}

// The binomial trees a broadcast forwards down.
const (
	overTeam    = iota // every rank, relative to the root
	overLeaders        // the hosts' leaders, relative to the root's host
	overHost           // the ranks of this PE's host, relative to its leader
)

// binomialRank is the team rank at relative rank rel of a tree over, with
// cnt ranks, rooted at root.
func (t *Team) binomialRank(over, rel, root int) int {
	switch over {
	case overLeaders:
		s := t.shape
		return s.leaderOf((rel+s.hostOf[root])%len(s.hosts), root)
	case overHost:
		s := t.shape
		h := s.hostOf[t.me]
		list := s.hosts[h]
		return list[(rel+s.pos[s.leaderOf(h, root)])%len(list)]
	}
	return (rel + root) % len(t.members)
}

// hostBroadcast is broadcast on a team with a host shape: down the leaders'
// tree, then down each host's. Every PE hears once: a leader from its
// parent among the leaders, the others from theirs in the host.
func (t *Team) hostBroadcast(dest, source []byte, root int, dr core.Region, off int) error {
	if err := t.barrier(); err != nil {
		return err
	}
	s := t.shape
	nh, h := len(s.hosts), s.hostOf[t.me]
	lead := s.leaderOf(h, root)
	wait := t.g.await // a leader hears from one of another host
	if t.me != lead {
		wait = t.g.awaitHost // the others from their parent in the host
	}
	if t.me == root {
		copy(dest, source)
	} else if err := wait(gwData, 1); err != nil {
		return err
	}
	if t.me == lead {
		rel := (h - s.hostOf[root] + nh) % nh
		if err := t.g.binomialSend(overLeaders, rel, nh, root, dest, dr, off); err != nil {
			return err
		}
	}
	nl := len(s.hosts[h])
	rel := (s.pos[t.me] - s.pos[lead] + nl) % nl
	return t.g.binomialSend(overHost, rel, nl, root, dest, dr, off)
}

// hostGather is FCollect and Collect on a team with a host shape: the
// block of rank r, at[r] to at[r+1] of dest (bytes at off in dr on every
// member), comes from r's mine. It starts where every member is known to
// have entered the collective: the caller's barrier or tree.
//
// A leader waits for the blocks of every other rank, the other PEs for
// those of their host and one count from their leader, which puts the
// other hosts' blocks into them once it has them all. A caller whose own
// block would pass the end of dest passes none (and reports it); the
// leader passes on nothing past the end of its dest.
func (t *Team) hostGather(dest []byte, dr core.Region, off int, at []int, mine []byte) error {
	s, w, ep := t.shape, t.w, t.w.coll.ep
	n, h := len(t.members), s.hostOf[t.me]
	local := s.hosts[h]
	lead := local[0]
	count := t.base() + heardOff
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	// This PE's block: into itself, every PE of its host and the leader of
	// every other host, beginning after itself so not all write one PE at
	// once.
	if len(mine) > 0 {
		copy(dest[at[t.me]:], mine)
	}
	sendTo := func(r int) {
		if len(mine) > 0 {
			keep(ep.Put(t.members[r], dr, off+at[t.me], mine))
		}
	}
	for i := 1; i < len(local); i++ {
		sendTo(local[(s.pos[t.me]+i)%len(local)])
	}
	for i := 1; i < len(s.hosts); i++ {
		sendTo(s.hosts[(h+i)%len(s.hosts)][0])
	}
	keep(ep.Fence())
	for i := 1; i < len(local); i++ {
		keep(t.add(local[(s.pos[t.me]+i)%len(local)], count))
	}
	for i := 1; i < len(s.hosts); i++ {
		keep(t.add(s.hosts[(h+i)%len(s.hosts)][0], count))
	}
	if first != nil {
		return first
	}
	if t.me != lead {
		// The host's PEs and, last, its leader.
		t.heard += uint64(len(local))
		return w.waitHostGE(t.among(), count, t.heard)
	}
	t.heard += uint64(n - 1)
	if err := w.waitGE(t.among(), count, t.heard); err != nil {
		return err
	}
	if len(local) == 1 {
		return nil
	}
	// Pass the other hosts' blocks on, in runs of consecutive ranks.
	for i := 1; i < len(local); i++ {
		to := t.members[local[i]]
		for r := 0; r < n; {
			if s.hostOf[r] == h {
				r++
				continue
			}
			end := r
			for end < n && s.hostOf[end] != h {
				end++
			}
			if hi := min(at[end], len(dest)); at[r] < hi {
				keep(ep.Put(to, dr, off+at[r], dest[at[r]:hi]))
			}
			r = end
		}
	}
	keep(ep.Fence())
	for i := 1; i < len(local); i++ {
		keep(t.add(local[i], count))
	}
	return first
}

// add adds one to the word at off on the team's PE rank.
func (t *Team) add(rank, off int) error {
	return t.w.coll.ep.Atomic(t.members[rank], t.w.heap, off, core.AtomicAdd, core.Uint64, 1)
}

// blockEnds returns, in the team's scratch, the byte offsets at which the
// ranks' blocks begin in dest, and their end: size bytes each, or, with
// sizes, sizes[r] elements of esize bytes for rank r; nil if the end would
// not fit an int (counts no slice can have).
func (t *Team) blockEnds(size int, sizes []uint64, esize int) []int {
	n := len(t.members)
	if cap(t.at) < n+1 {
		t.at = make([]int, n+1)
	}
	at := t.at[:n+1]
	at[0] = 0
	for r := range n {
		b := size
		if sizes != nil {
			if sizes[r] > uint64(math.MaxInt-at[r])/uint64(esize) {
				return nil
			}
			b = int(sizes[r]) * esize
		}
		at[r+1] = at[r] + b
	}
	return at
}

// gatherSizes learns every member's element count, through the tree (an
// fcollect, which also tells that every member has entered); ok is false,
// and nothing happens, where the counts do not fit it.
func (t *Team) gatherSizes(mine int) (sizes []uint64, ok bool, err error) {
	n := len(t.members)
	if !t.treeFits(n * 8) {
		return nil, false, nil
	}
	if cap(t.sizes) < n {
		t.sizes = make([]uint64, n)
	}
	sizes = t.sizes[:n]
	clear(sizes)
	sizes[t.me] = uint64(mine)
	return sizes, true, tree(&t.g, 0, mem.Bytes(sizes), orBytes, true)
}
