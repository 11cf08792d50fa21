package shmem

// Host-aware collectives. Where a job has several PEs on some host and
// spans more than one host, a signal between two PEs of one host is a
// store into memory both map, and a signal between hosts is a message,
// hundreds of times dearer. Barriers and reductions go by host
// (coll_hostreduce.go): the last PE of each host to arrive sends its
// host's part to the leaders that combine them, without waking its own
// leader first. The combining tree (coll_tree.go), which the other small
// collectives take, takes a shape that crosses hosts as little as it can:
// inside each host the team's PEs there form a tree under one leader, and
// the leaders form a tree across hosts, so a step costs one message up
// and one down per host beside the root's, instead of one per PE.
//
// Leaders that, once their host's PEs had reached them through the tree,
// sent their host's part straight to every other leader measured slower
// than the tree over tcp on namespaced hosts whose PEs outnumber the
// CPUs, alternating in one run (2 x 2 barrier 171 µs against 150,
// sum-reduce 196 against 169; 3 x 2 sum-reduce 541 against 359): every
// leader woke for its host's PEs, then for every other leader. The last
// PE to arrive sending at once, with no leader to wake first, is what
// made the direct step pay on two hosts (coll_hostreduce.go).
//
// The notion of a host comes from core: the host ids every PE gives at
// init (as for TeamShared) and core.DirectAccess, which must map every PE
// of the host, on every PE, for the hierarchy to be used; shmem knows
// nothing of the transports behind either.

// hostArity is the fan-out of each level of the two-level tree: a leader
// serves hostArity PEs of its host and hostArity leaders of other hosts,
// so its children fit the treeArity payload places of a slot.
const hostArity = treeArity / 2

// hostShape is a team's grouping of ranks by host: nil for a team on one
// host, with one PE per host, or in a job whose PEs of one host do not all
// map each other's memory; the combining tree is flat there.
type hostShape struct {
	hostOf []int   // team-host index of each rank, hosts in order of first rank
	hosts  [][]int // ranks of each team-host, in rank order
	pos    []int   // each rank's place in its host's list
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
	return s
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

// flatLinks is rank me's place in the flat treeArity-ary heap of n ranks
// relative to root.
func flatLinks(n, me, root int) treeLinks {
	var l treeLinks
	rel := (me - root + n) % n
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

// links returns this PE's place in the tree rooted at root: the flat
// treeArity-ary heap of ranks relative to the root, or the two-level tree
// of the team's host shape.
func (t *Team) links(root int) treeLinks {
	if t.shape == nil {
		return flatLinks(len(t.members), t.me, root)
	}
	var l treeLinks
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
	case li > 0:
		l.parent = treeLink{rankAt(((li-1)/hostArity+rh)%nh, 0), hostArity + (li-1)%hostArity}
	}
	for c := hostArity*lp + 1; c < min(nl, hostArity*lp+hostArity+1); c++ {
		l.kids[l.nkids] = treeLink{rankAt(h, c), (c - 1) % hostArity}
		l.nkids++
	}
	if lp == 0 {
		for c := hostArity*li + 1; c < min(nh, hostArity*li+hostArity+1); c++ {
			l.kids[l.nkids] = treeLink{rankAt((c+rh)%nh, 0), hostArity + (c-1)%hostArity}
			l.nkids++
		}
	}
	return l
}
