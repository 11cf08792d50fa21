package ntbring

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

// The fabrics the routing tests walk: rings, and tori down to rows and
// columns of 2, where a host's two sides along a row (or column) face
// one host over two links.
var testTopologies = []topology{
	ringOf(2), ringOf(3), ringOf(4), ringOf(5), ringOf(8), ringOf(9),
	torusOf(4, 2), torusOf(6, 3), torusOf(6, 2), torusOf(9, 3), torusOf(12, 4), torusOf(16, 4), torusOf(64, 8), torusOf(20, 5),
}

func TestTorusCabling(t *testing.T) {
	tt := torusOf(12, 4) // rows of 4: 0 1 2 3 / 4 5 6 7 / 8 9 10 11
	for _, c := range []struct {
		me   int
		s    ntb.Side
		nb   int
		link int
	}{
		{5, ntb.Left, 4, 8}, {5, ntb.Right, 6, 10}, {5, ntb.Up, 1, 3}, {5, ntb.Down, 9, 11},
		{0, ntb.Left, 3, 6}, {3, ntb.Right, 0, 6}, {0, ntb.Up, 8, 17}, {8, ntb.Down, 0, 17},
	} {
		require.Equal(t, c.nb, tt.neighbour(c.me, c.s), "%d %s", c.me, c.s)
		require.Equal(t, c.link, tt.linkOf(c.me, c.s), "%d %s", c.me, c.s)
	}
	for _, topo := range testTopologies {
		seen := map[int]int{}
		for me := range topo.hosts {
			for _, s := range topo.sides() {
				nb := topo.neighbour(me, s)
				require.Equal(t, me, topo.neighbour(nb, opposite(s)), "%s: %d %s", topo, me, s)
				require.Equal(t, topo.linkOf(me, s), topo.linkOf(nb, opposite(s)), "%s: both ends of a link", topo)
				seen[topo.linkOf(me, s)]++
			}
		}
		require.Len(t, seen, topo.links(), "%s", topo)
		for k, ends := range seen {
			require.Equal(t, 2, ends, "%s: link %d", topo, k)
		}
	}
}

// allRoutes is every host's table.
func allRoutes(topo topology, cut linkSet) [][]hop {
	tables := make([][]hop, topo.hosts)
	for me := range tables {
		tables[me] = routes(topo, cut, me)
	}
	return tables
}

// walkTables follows the routing tables of every host, all knowing cut,
// from src to dst; it returns the hops taken, failing if the walk crosses
// a cut link or goes on longer than the table said.
func walkTables(t *testing.T, topo topology, cut linkSet, tables [][]hop, src, dst int) int {
	t.Helper()
	want := tables[src][dst].hops
	at, n := src, 0
	for at != dst {
		h := tables[at][dst]
		require.NotZero(t, h.hops, "%s cut %v: %d -> %d stuck at %d", topo, cut, src, dst, at)
		require.False(t, cut.has(topo.linkOf(at, h.side)), "%s cut %v: %d -> %d crosses a cut at %d", topo, cut, src, dst, at)
		at = topo.neighbour(at, h.side)
		n++
		require.LessOrEqual(t, n, want, "%s cut %v: %d -> %d loops", topo, cut, src, dst)
	}
	return n
}

// With no cuts, routes is the closed form (hopsTo, and route on a ring):
// along the row first, the shorter way, right (or down) on a tie.
func TestRoutesWhole(t *testing.T) {
	for _, topo := range testTopologies {
		tables := allRoutes(topo, linkSet{})
		for me := range topo.hosts {
			table := tables[me]
			for dst := range topo.hosts {
				if dst == me {
					require.Zero(t, table[dst].hops)
					continue
				}
				s, hops := topo.hopsTo(me, dst)
				require.Equal(t, hop{s, hops}, table[dst], "%s: %d -> %d", topo, me, dst)
				if !topo.torus() {
					rs, rh := route(me, dst, topo.hosts)
					require.Equal(t, hop{rs, rh}, table[dst])
				}
				require.Equal(t, hops, walkTables(t, topo, linkSet{}, tables, me, dst))
			}
		}
	}
	// On a 4 x 4 torus the farthest host is 4 hops away; on a ring of 16, 8.
	require.Equal(t, 4, routes(torusOf(16, 4), linkSet{}, 0)[10].hops)
	require.Equal(t, ntb.Right, routes(torusOf(16, 4), linkSet{}, 0)[10].side, "row first, right on a tie")
	require.Equal(t, hop{ntb.Down, 2}, routes(torusOf(16, 4), linkSet{}, 0)[8])
	require.Equal(t, hop{ntb.Up, 1}, routes(torusOf(16, 4), linkSet{}, 0)[12])
}

func TestRoutesRoundCuts(t *testing.T) {
	tt := torusOf(16, 4)
	var c linkSet
	c.add(tt.linkOf(0, ntb.Right)) // 0 - 1
	for _, x := range []struct {
		me, dst int
		want    hop
	}{
		{0, 1, hop{ntb.Left, 3}}, // 0 3 2 1: the row's other way is as short as the square, and along the row is preferred
		{1, 0, hop{ntb.Right, 3}},
		{0, 2, hop{ntb.Left, 2}},
		{0, 5, hop{ntb.Down, 2}},
		{4, 1, hop{ntb.Right, 2}},
	} {
		require.Equal(t, x.want, routes(tt, c, x.me)[x.dst], "%d -> %d", x.me, x.dst)
	}
	// A host whose four links are cut is unreachable; the others still
	// reach each other.
	var iso linkSet
	for _, s := range tt.sides() {
		iso.add(tt.linkOf(5, s))
	}
	isoTables := allRoutes(tt, iso)
	for me := range tt.hosts {
		table := isoTables[me]
		for dst := range tt.hosts {
			switch {
			case dst == me:
			case me == 5 || dst == 5:
				require.Zero(t, table[dst].hops, "%d -> %d", me, dst)
			default:
				require.NotZero(t, table[dst].hops, "%d -> %d", me, dst)
				walkTables(t, tt, iso, isoTables, me, dst)
			}
		}
	}
	// A ring cut once goes the way that does not cross the cut, as
	// ringProto.sideFor says.
	r := ringOf(8)
	var rc linkSet
	rc.add(3)
	for me := range 8 {
		for dst := range 8 {
			if me == dst {
				continue
			}
			h := routes(r, rc, me)[dst]
			right := (dst - me + 8) % 8
			wantSide, wantHops := ntb.Right, right
			if (3-me+8)%8 < right {
				wantSide, wantHops = ntb.Left, 8-right
			}
			require.Equal(t, hop{wantSide, wantHops}, h, "%d -> %d", me, dst)
		}
	}
}

// Any cuts: every host that a path reaches is reached by following the
// tables, never across a cut and in the table's hops, which are the
// fewest (breadth first, independently of routes); the others are marked
// unreachable.
func TestRoutesRandomCuts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, topo := range testTopologies {
		for range 30 {
			var cut linkSet
			for range rng.IntN(topo.links()/2 + 1) {
				cut.add(rng.IntN(topo.links()))
			}
			tables := allRoutes(topo, cut)
			for src := range topo.hosts {
				table := tables[src]
				d := fewestHops(topo, cut, src)
				for dst := range topo.hosts {
					if dst == src {
						continue
					}
					if d[dst] < 0 {
						require.Zero(t, table[dst].hops, "%s cut %v: %d -> %d", topo, cut, src, dst)
						continue
					}
					require.Equal(t, d[dst], table[dst].hops, "%s cut %v: %d -> %d", topo, cut, src, dst)
					require.Equal(t, d[dst], walkTables(t, topo, cut, tables, src, dst))
				}
			}
		}
	}
}

// fewestHops is the hops from src to every host over links not cut,
// breadth first over the sides in sides() order.
func fewestHops(topo topology, cut linkSet, src int) []int {
	d := make([]int, topo.hosts)
	for i := range d {
		d[i] = -1
	}
	d[src] = 0
	for q := []int{src}; len(q) > 0; q = q[1:] {
		for _, s := range topo.sides() {
			if nb := topo.neighbour(q[0], s); !cut.has(topo.linkOf(q[0], s)) && d[nb] < 0 {
				d[nb] = d[q[0]] + 1
				q = append(q, nb)
			}
		}
	}
	return d
}

func BenchmarkRoutes64(b *testing.B) {
	topo := torusOf(64, 8)
	var cut linkSet
	cut.add(5)
	b.ReportAllocs()
	for b.Loop() {
		_ = routes(topo, cut, 9)
	}
}
