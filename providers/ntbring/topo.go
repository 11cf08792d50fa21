package ntbring

import "github.com/goshmem/goshmem/internal/ntb"

// topology is how the hosts' NT ports are cabled: a ring (two ports a
// host: host i's Left port faces host i-1, its Right port host i+1).
type topology struct {
	hosts int
}

// ringOf is the ring of n hosts.
func ringOf(n int) topology { return topology{hosts: n} }

// sides is the ports every host has, in the order the provider keeps
// its links.
func (t topology) sides() []ntb.Side { return []ntb.Side{ntb.Left, ntb.Right} }

// neighbour is the host on side s of host me.
func (t topology) neighbour(me int, s ntb.Side) int { return neighbour(me, t.hosts, s) }
