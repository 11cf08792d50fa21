package shmem

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTreeLinks checks the combining tree's shapes, flat and host-aware,
// for many teams and roots: every rank but the root has one parent, which
// lists it as a child at the same payload place; places are distinct per
// parent and fit a slot; every rank reaches the root; and in the
// host-aware shape only one rank per host, its leader, has a parent on
// another host.
func TestTreeLinks(t *testing.T) {
	layouts := map[string][]int{
		"1 host x 5":     {0, 0, 0, 0, 0},
		"5 hosts x 1":    {0, 1, 2, 3, 4},
		"2 x 2":          {0, 0, 1, 1},
		"3 x 2":          {0, 0, 1, 1, 2, 2},
		"interleaved":    {0, 1, 0, 1, 2, 2, 0},
		"uneven":         {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 2},
		"many hosts x 2": {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10},
		"40 on 3 hosts":  make([]int, 40),
	}
	for i := range layouts["40 on 3 hosts"] {
		layouts["40 on 3 hosts"][i] = i % 3
	}
	for name, hostOf := range layouts {
		members := make([]int, len(hostOf))
		for i := range members {
			members[i] = i
		}
		shape := newHostShape(hostOf, members)
		hosts := map[int]bool{}
		for _, h := range hostOf {
			hosts[h] = true
		}
		require.Equal(t, len(hosts) > 1 && len(hosts) < len(hostOf), shape != nil, name)
		n := len(members)
		for root := range n {
			t.Run(fmt.Sprintf("%s/root %d", name, root), func(t *testing.T) {
				links := make([]treeLinks, n)
				for me := range n {
					links[me] = (&Team{members: members, me: me, shape: shape}).links(root)
				}
				crossing := map[int]int{}
				for me, l := range links {
					if me == root {
						require.Equal(t, -1, l.parent.rank)
					} else {
						p := l.parent
						require.True(t, p.rank >= 0 && p.rank < n && p.rank != me, "rank %d: parent %d", me, p.rank)
						found := 0
						for _, k := range links[p.rank].kids[:links[p.rank].nkids] {
							if k.rank == me {
								found++
								require.Equal(t, p.place, k.place, "rank %d", me)
							}
						}
						require.Equal(t, 1, found, "rank %d among its parent's children", me)
						if hostOf[p.rank] != hostOf[me] {
							crossing[hostOf[me]]++
						}
					}
					places := map[int]bool{}
					for _, k := range l.kids[:l.nkids] {
						require.True(t, k.place >= 0 && k.place < treeArity)
						require.False(t, places[k.place], "rank %d: place %d twice", me, k.place)
						places[k.place] = true
					}
					// The root is reached, in fewer steps than ranks.
					r := me
					for steps := 0; r != root; steps++ {
						require.Less(t, steps, n)
						r = links[r].parent.rank
					}
				}
				if shape != nil {
					for h, c := range crossing {
						require.Equal(t, 1, c, "host %d: ranks with a parent elsewhere", h)
					}
					require.Zero(t, crossing[hostOf[root]])
				}
			})
		}
	}
}
