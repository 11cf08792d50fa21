package ntbring

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

func TestRoute(t *testing.T) {
	for _, c := range []struct {
		me, dst, n int
		side       ntb.Side
		hops       int
	}{
		{0, 1, 2, ntb.Right, 1},
		{1, 0, 2, ntb.Right, 1}, // two links between two hosts: right on a tie
		{0, 2, 3, ntb.Left, 1},
		{0, 2, 4, ntb.Right, 2}, // tie
		{0, 3, 4, ntb.Left, 1},
		{1, 4, 5, ntb.Left, 2},
		{4, 1, 5, ntb.Right, 2},
		{2, 0, 5, ntb.Left, 2},
	} {
		side, hops := route(c.me, c.dst, c.n)
		require.Equal(t, c.side, side, "%d -> %d of %d", c.me, c.dst, c.n)
		require.Equal(t, c.hops, hops, "%d -> %d of %d", c.me, c.dst, c.n)
	}
	// Every transfer reaches its destination by following its side.
	for n := 2; n <= 9; n++ {
		for me := range n {
			for dst := range n {
				if dst == me {
					continue
				}
				side, hops := route(me, dst, n)
				require.LessOrEqual(t, hops, n/2)
				at := me
				for range hops {
					at = neighbour(at, n, side)
				}
				require.Equal(t, dst, at, "%d -> %d of %d", me, dst, n)
			}
		}
	}
	require.Equal(t, ntb.Right, opposite(ntb.Left))
	require.Equal(t, ntb.Left, opposite(ntb.Right))
}
