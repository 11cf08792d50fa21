package ntbring

import (
	"fmt"

	"github.com/goshmem/goshmem/internal/ntb"
)

// topology is how the hosts' NT ports are cabled, as the fabric
// describes it: a ring (two ports a host: host i's Left port faces host
// i-1, its Right port host i+1), or a 2D torus of rows of width hosts,
// host r*width+c in row r and column c, whose Left and Right ports face
// the hosts beside it in its row and Up and Down the hosts above and
// below it in its column, both wrapping round.
//
// Links are numbered as the simulated fabric numbers them: in a ring,
// link k joins host k's Right port to host k+1's Left; in a torus, link
// 2k joins host k's Right port to the Left port of the next host of its
// row, and link 2k+1 host k's Down port to the Up port of the host below.
type topology struct {
	hosts int
	width int // hosts in a row of a torus; 0 for a ring
}

// ringOf is the ring of n hosts.
func ringOf(n int) topology { return topology{hosts: n} }

// torusOf is the torus of n hosts in rows of width.
func torusOf(n, width int) topology { return topology{hosts: n, width: width} }

func (t topology) torus() bool { return t.width != 0 }

func (t topology) String() string {
	if t.torus() {
		return fmt.Sprintf("torus of %d x %d hosts", t.width, t.hosts/t.width)
	}
	return fmt.Sprintf("ring of %d hosts", t.hosts)
}

// sides is the ports every host has, in the order the provider keeps its
// links and the order in which routing breaks ties (preference).
func (t topology) sides() []ntb.Side {
	if t.torus() {
		return []ntb.Side{ntb.Left, ntb.Right, ntb.Up, ntb.Down}
	}
	return []ntb.Side{ntb.Left, ntb.Right}
}

// neighbour is the host on side s of host me.
func (t topology) neighbour(me int, s ntb.Side) int {
	if !t.torus() {
		return neighbour(me, t.hosts, s)
	}
	w := t.width
	row, col := me/w, me%w
	switch s {
	case ntb.Left:
		return row*w + (col+w-1)%w
	case ntb.Right:
		return row*w + (col+1)%w
	case ntb.Up:
		return (me + t.hosts - w) % t.hosts
	}
	return (me + w) % t.hosts
}

// validSide reports whether hosts of t have a port on side s.
func (t topology) validSide(s ntb.Side) bool {
	return s >= 0 && int(s) < len(t.sides())
}

// links is the number of links.
func (t topology) links() int {
	if t.torus() {
		return 2 * t.hosts
	}
	return t.hosts
}

// linkOf is the index of the link on side s of host me.
func (t topology) linkOf(me int, s ntb.Side) int {
	if !t.torus() {
		return linkIndex(me, t.hosts, s)
	}
	switch s {
	case ntb.Right:
		return 2 * me
	case ntb.Left:
		return 2 * t.neighbour(me, ntb.Left)
	case ntb.Down:
		return 2*me + 1
	}
	return 2*t.neighbour(me, ntb.Up) + 1
}

// linkEnd is the host and side of link k's first end (a Right or, on a
// torus, a Down port).
func (t topology) linkEnd(k int) (int, ntb.Side) {
	if !t.torus() {
		return k, ntb.Right
	}
	if k%2 == 0 {
		return k / 2, ntb.Right
	}
	return k / 2, ntb.Down
}

// linkSet is a set of link indices, at most 2*maxHosts.
type linkSet [2 * maxHosts / 64]uint64

func (c *linkSet) add(k int)     { c[k/64] |= 1 << (k % 64) }
func (c linkSet) has(k int) bool { return c[k/64]&(1<<(k%64)) != 0 }
func (c linkSet) String() string { return fmt.Sprint(c.list()) }
func (c linkSet) list() (out []int) {
	for k := range len(c) * 64 {
		if c.has(k) {
			out = append(out, k)
		}
	}
	return out
}

// hop is where a transfer to one host goes next: the side it leaves by
// and how many hops it takes from here. hops 0 is the host itself, or a
// host no path reaches.
type hop struct {
	side ntb.Side
	hops int
}

// routes is host me's routing table over topology t with the links in
// cut down: for each destination, the side of a shortest path to it over
// the links that are not cut. Among shortest paths it prefers the sides
// in sides() order but for Right before Left and Down before Up, so that
// with no cuts a transfer goes along its row first, the shorter way
// round, and on a tie to the right (or down), as route does on a ring.
// Every host that knows the same cuts takes a next hop nearer the
// destination, so transfers relayed hop by hop never loop.
//
// It is a pure function of its arguments, computed again when the cuts
// change.
func routes(t topology, cut linkSet, me int) []hop {
	n := t.hosts
	pref := []ntb.Side{ntb.Right, ntb.Left}
	if t.torus() {
		pref = append(pref, ntb.Down, ntb.Up)
	}
	out := make([]hop, n)
	dist := make([]int, n)
	queue := make([]int, 0, n)
	for dst := range n {
		if dst == me {
			continue
		}
		// Hops to dst from every host, over the links not cut.
		for i := range dist {
			dist[i] = -1
		}
		dist[dst] = 0
		queue = append(queue[:0], dst)
		for len(queue) > 0 && dist[me] < 0 {
			h := queue[0]
			queue = queue[1:]
			for _, s := range pref {
				if cut.has(t.linkOf(h, s)) {
					continue
				}
				if nb := t.neighbour(h, s); dist[nb] < 0 {
					dist[nb] = dist[h] + 1
					queue = append(queue, nb)
				}
			}
		}
		if dist[me] < 0 {
			continue // cut off
		}
		for _, s := range pref {
			if !cut.has(t.linkOf(me, s)) && dist[t.neighbour(me, s)] == dist[me]-1 {
				out[dst] = hop{side: s, hops: dist[me]}
				break
			}
		}
	}
	return out
}

// hopsTo is the side and hop count of a transfer from me to dst over the
// whole fabric: routes with no cuts, without building the table. me !=
// dst.
func (t topology) hopsTo(me, dst int) (ntb.Side, int) {
	if !t.torus() {
		return route(me, dst, t.hosts)
	}
	w, h := t.width, t.hosts/t.width
	if s, d := route(me%w, dst%w, w); me%w != dst%w {
		dy := min((dst/w-me/w+h)%h, (me/w-dst/w+h)%h)
		return s, d + dy
	}
	s, d := route(me/w, dst/w, h)
	if s == ntb.Left {
		return ntb.Up, d
	}
	return ntb.Down, d
}
