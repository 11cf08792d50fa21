package shmem

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Host-aware collectives. Where a job has several PEs on some host and
// spans more than one host, a signal between two PEs of one host is a
// store into memory both map, and a signal between hosts is a message,
// hundreds of times dearer. The combining tree (coll_tree.go) then takes a
// shape that crosses hosts as little as it can: inside each host the
// team's PEs there form a tree under one leader, and the leaders form a
// tree across hosts. A barrier or small reduction costs one message up and
// one down per host beside the root's, instead of one per PE.
//
// The notion of a host comes from core: the host ids every PE gives at
// init (as for TeamShared) and core.DirectAccess, which must map every PE
// of the host, on every PE, for the hierarchy to be used; shmem knows
// nothing of the transports behind either.

// hostArity is the fan-out of each level of the two-level tree: a leader
// serves hostArity PEs of its host and hostArity leaders of other hosts,
// so its children fit the treeArity payload places of a slot.
const hostArity = treeArity / 2

// On a team of up to xchgHosts hosts the leaders do not form a tree: each
// sends its host's part straight to every other leader, and every leader
// combines the hosts' parts in host order. On two hosts that is the
// tree's one message each way, sent at once instead of one after the
// other. On more it sends more messages than the tree, each a wake-up of
// a process on another host; where the PEs outnumber the CPUs (3 hosts of
// 2 PEs on 2 CPUs, docs/benchmarks.md) the tree of hosts measured faster
// (3 x 2 sum-reduce 359 µs against 541 exchanging), so only two hosts
// exchange. The parts land in the slot's places of leader children, which such a team
// does not use: two banks, by generation parity, of one place per other
// host (see xchgPlace), each a generation word on a line of its own, then
// the part.
const (
	xchgHosts = 2
	xchgOff   = upOff + hostArity*treeChunk
	xchgArea  = (treeArity - hostArity) * treeChunk
)

// hostShape is a team's grouping of ranks by host: nil for a team on one
// host, with one PE per host, or in a job whose PEs of one host do not all
// map each other's memory; the combining tree is flat there.
type hostShape struct {
	hostOf []int   // team-host index of each rank, hosts in order of first rank
	hosts  [][]int // ranks of each team-host, in rank order
	pos    []int   // each rank's place in its host's list
	// xchg is the payload bytes of a place of the leaders' exchange, the
	// most a tree collective carries on the team; 0 where the team has
	// more than xchgHosts hosts, whose leaders form a tree.
	xchg int
}

// initHosts records, collectively at init, the host of every World PE and
// whether the host-aware tree may be used: every PE maps the memory of
// every other PE of its host. hosts holds each PE's host id.
func (c *collectives) initHosts(hosts [][]byte) error {
	w := c.w
	ids := map[string]int{}
	c.hostOf = make([]int, len(hosts))
	several := false
	for pe, h := range hosts {
		id, ok := ids[string(h)]
		if !ok {
			id = len(ids)
			ids[string(h)] = id
		} else {
			several = true
		}
		c.hostOf[pe] = id
	}
	if len(ids) < 2 || !several {
		return nil // every team's tree is flat: no need to ask more
	}
	mapped := byte(1)
	if w.direct == nil {
		mapped = 0
	} else {
		for pe, h := range c.hostOf {
			if h == c.hostOf[w.me] && pe != w.me && w.direct.PeerBytes(pe, w.heap) == nil {
				mapped = 0
				break
			}
		}
	}
	all, err := w.boot.Allgather([]byte{mapped})
	if err != nil {
		return err
	}
	for _, m := range all {
		if len(m) != 1 || m[0] != 1 {
			return nil
		}
	}
	c.hostAware = true
	return nil
}

// posedHosts turns a host index per PE into host ids, for tests whose PEs,
// all on one host, pose as spread over several for the collectives.
func posedHosts(hostOf []int) [][]byte {
	hosts := make([][]byte, len(hostOf))
	for pe, h := range hostOf {
		hosts[pe] = []byte{byte(h), byte(h >> 8)}
	}
	return hosts
}

// shapeHosts sets the team's host shape from its members.
func (t *Team) shapeHosts() {
	if c := &t.w.coll; c.hostAware {
		t.shape = newHostShape(c.hostOf, t.members)
	}
}

// newHostShape groups the ranks of a team of members by host, hostOf
// giving each World PE's; nil if the team has one host or one PE per host.
func newHostShape(hostOf, members []int) *hostShape {
	s := &hostShape{hostOf: make([]int, len(members)), pos: make([]int, len(members))}
	index := map[int]int{}
	several := false
	for r, pe := range members {
		h, ok := index[hostOf[pe]]
		if !ok {
			h = len(s.hosts)
			index[hostOf[pe]] = h
			s.hosts = append(s.hosts, nil)
		} else {
			several = true
		}
		s.hostOf[r] = h
		s.pos[r] = len(s.hosts[h])
		s.hosts[h] = append(s.hosts[h], r)
	}
	if len(s.hosts) < 2 || !several {
		return nil
	}
	if nh := len(s.hosts); nh <= xchgHosts {
		s.xchg = min(treeChunk, (xchgArea/(2*(nh-1))-cacheLine)&^(cacheLine-1))
	}
	return s
}

// treeMax is the most bytes a tree collective carries on the team.
func (t *Team) treeMax() int {
	if t.shape != nil && t.shape.xchg > 0 {
		return t.shape.xchg
	}
	return treeChunk
}

// xchgPlace is the heap offset of the place, in the bank of generation
// gen, where the leader of team-host to finds the part of team-host from:
// its generation word; the part follows one line later.
func (s *hostShape) xchgPlace(base int, gen uint64, to, from int) int {
	nh := len(s.hosts)
	return base + xchgOff + (int(gen&1)*(nh-1)+(from-to-1+nh)%nh)*(cacheLine+s.xchg)
}

// exchange is a leader's step of the tree on a team whose leaders
// exchange: acc, its host's part (the root's data on the root's host for a
// broadcast, where combine is nil), goes to every other leader, and comes
// back as the whole: the parts combined in host order, or the root's host's
// part. Every leader computes the same bits.
//
// Each part has a generation word of its own, not a count shared by the
// senders: the leader of a host changes with the root, and two leaders of
// one host reach a peer by different connections, so a count could be
// made up by the next generation's sender before the last one's part
// landed. A leader puts the part of generation g+2 into a peer's bank of
// g only after it has finished g+1, which needed the peer's part of g+1,
// which the peer sent after it had finished g, for which the part and
// word of g had landed: so no word is ever taken back to an older
// generation, and the banks need no other synchronisation.
func exchange[T Elem](t *Team, root int, acc []T, combine func(acc, in []T), gen uint64) error {
	s, w, ep, base := t.shape, t.w, t.w.coll.ep, t.base()
	nh, h := len(s.hosts), s.hostOf[t.me]
	rh := s.hostOf[root]
	b := mem.Bytes(acc)
	send := len(b) > 0 && (combine != nil || h == rh)
	leader := func(g int) int { // as links has it: the root leads its host
		if g == rh {
			return t.members[root]
		}
		return t.members[s.hosts[g][0]]
	}
	for i := 1; i < nh; i++ {
		g := (h + i) % nh
		place := s.xchgPlace(base, gen, g, h)
		if send {
			// The part lands before the word that announces it.
			if err := ep.Put(leader(g), w.heap, place+cacheLine, b); err != nil {
				return err
			}
			if err := ep.Fence(); err != nil {
				return err
			}
		}
		if err := ep.Atomic(leader(g), w.heap, place, core.AtomicWrite, core.Uint64, gen); err != nil {
			return err
		}
	}
	for i := 1; i < nh; i++ {
		if err := w.waitGE(s.xchgPlace(base, gen, h, (h+i)%nh), gen); err != nil {
			return err
		}
	}
	if len(b) == 0 {
		return nil
	}
	part := func(g int) []T {
		off := s.xchgPlace(base, gen, h, g) + cacheLine
		return mem.Slice[T](w.local[off : off+len(b)])
	}
	switch {
	case combine == nil:
		if h != rh {
			copy(acc, part(rh))
		}
	case h == 0:
		for g := 1; g < nh; g++ {
			combine(acc, part(g))
		}
	default:
		// Into host 0's part, which nobody writes before generation gen+2.
		sum := part(0)
		for g := 1; g < nh; g++ {
			if g == h {
				combine(sum, acc)
			} else {
				combine(sum, part(g))
			}
		}
		copy(acc, sum)
	}
	return nil
}

// treeLink is a PE the tree connects to: its team rank and the payload
// place (0 to treeArity-1) the child uses in its parent's slot.
type treeLink struct{ rank, place int }

// treeLinks is the combining tree rooted at team rank root as this PE sees
// it: its parent (rank -1 at the root) and its children, in the order
// their contributions combine.
type treeLinks struct {
	parent treeLink
	kids   [treeArity]treeLink
	nkids  int
}

// links returns this PE's place in the tree rooted at root: the flat
// treeArity-ary heap of ranks relative to the root, or the two-level tree
// of the team's host shape.
func (t *Team) links(root int) treeLinks {
	var l treeLinks
	n := len(t.members)
	if t.shape == nil {
		rel := (t.me - root + n) % n
		l.parent.rank = -1
		if rel > 0 {
			l.parent = treeLink{((rel-1)/treeArity + root) % n, (rel - 1) % treeArity}
		}
		for c := treeArity*rel + 1; c < min(n, treeArity*rel+treeArity+1); c++ {
			l.kids[l.nkids] = treeLink{(c + root) % n, l.nkids}
			l.nkids++
		}
		return l
	}
	s := t.shape
	nh := len(s.hosts)
	rh := s.hostOf[root]
	h := s.hostOf[t.me]
	// Places in a host's list, relative to its leader: the root on the
	// root's host, the host's first rank on the others.
	lead := func(g int) int {
		if g == rh {
			return s.pos[root]
		}
		return 0
	}
	rankAt := func(g, q int) int {
		list := s.hosts[g]
		return list[(q+lead(g))%len(list)]
	}
	nl := len(s.hosts[h])
	lp := (s.pos[t.me] - lead(h) + nl) % nl
	li := (h - rh + nh) % nh
	l.parent.rank = -1
	switch {
	case lp > 0:
		l.parent = treeLink{rankAt(h, (lp-1)/hostArity), (lp - 1) % hostArity}
	case s.xchg > 0:
		// A leader: the leaders exchange instead.
	case li > 0:
		l.parent = treeLink{rankAt(((li-1)/hostArity+rh)%nh, 0), hostArity + (li-1)%hostArity}
	}
	for c := hostArity*lp + 1; c < min(nl, hostArity*lp+hostArity+1); c++ {
		l.kids[l.nkids] = treeLink{rankAt(h, c), (c - 1) % hostArity}
		l.nkids++
	}
	if lp == 0 && s.xchg == 0 {
		for c := hostArity*li + 1; c < min(nh, hostArity*li+hostArity+1); c++ {
			l.kids[l.nkids] = treeLink{rankAt((c+rh)%nh, 0), hostArity + (c-1)%hostArity}
			l.nkids++
		}
	}
	return l
}
