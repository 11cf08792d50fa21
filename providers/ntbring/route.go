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

// opposite is the other side: a relayed transfer keeps its direction, so
// it leaves by the side opposite the one it came in by.
func opposite(s ntb.Side) ntb.Side {
	if s == ntb.Left {
		return ntb.Right
	}
	return ntb.Left
}
