package tcp

import (
	"testing"

	"github.com/goshmem/goshmem/core"
)

// BenchPair opens two PEs as goroutines of this process over TCP on
// 127.0.0.1, with a region of size bytes each, and returns PE 0's
// endpoint and region: PE 1's progress goroutine serves them.
func BenchPair(b *testing.B, size int) (core.Endpoint, core.Region) {
	doms, _ := openJob(b, 2, nil)
	regs := newRegions(b, doms, size)
	return newEndpoint(b, doms[0]), regs[0]
}

// LockedBenchPair is BenchPair for callers locked to their threads
// (core.Config.LockedCallers), a C program's.
func LockedBenchPair(b *testing.B, size int) (core.Endpoint, core.Region) {
	doms, _ := openJobWith(b, 2, nil, func(cfg *core.Config) { cfg.LockedCallers = true })
	regs := newRegions(b, doms, size)
	return newEndpoint(b, doms[0]), regs[0]
}

// Writes is how many writes PE 0's endpoint's domain made on its
// connection to pe (writer.writes).
func Writes(ep core.Endpoint, pe int) uint64 {
	return ep.(*endpoint).d.conns[pe].w.writes.Load()
}
