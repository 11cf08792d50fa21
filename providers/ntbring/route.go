package ntbring

import "github.com/goshmem/goshmem/internal/ntb"

// One PE per host: PE i is host i, and host i's Left port faces host i-1,
// its Right port host i+1, modulo the ring size.

// neighbour is the host on side s of host me in a ring of n.
func neighbour(me, n int, s ntb.Side) int {
	if s == ntb.Left {
		return (me + n - 1) % n
	}
	return (me + 1) % n
}

// route picks the side a transfer from me to dst leaves by: the shorter way
// round, right on a tie, and the number of hops it takes. me != dst.
func route(me, dst, n int) (ntb.Side, int) {
	right := (dst - me + n) % n
	left := n - right
	if left < right {
		return ntb.Left, left
	}
	return ntb.Right, right
}

// opposite is the side facing away from s, along the same row or
// column: on a ring a relayed transfer keeps its direction, so it leaves
// by the side opposite the one it came in by; the far end of a link
// leaving by s is the port on its host's opposite side.
func opposite(s ntb.Side) ntb.Side {
	switch s {
	case ntb.Left:
		return ntb.Right
	case ntb.Right:
		return ntb.Left
	case ntb.Up:
		return ntb.Down
	}
	return ntb.Up
}
