package tcp

import (
	"github.com/goshmem/goshmem/core"
)

// Name is the provider's registered name.
const Name = "tcp"

// injectSize is the largest put copied into the send queue before Put
// returns; larger ones are written from the caller's buffer, which Put
// then waits for. It is Info's InjectSize.
const injectSize = 16 << 10

func init() { core.Register(provider{}) }

type provider struct{}

func (provider) Name() string { return Name }

func (provider) Info() core.Info {
	return core.Info{
		Name:        Name,
		Description: "PEs on any hosts, one authenticated TCP connection per pair; a progress goroutine per connection applies puts and atomics at the target",
		Version:     "1",
		Caps: core.CapRMA | core.CapAtomic | core.CapFetchAtomic | core.CapCompareSwap |
			core.CapAtomicFloat | core.CapLocalAtomics | core.CapPutSignal | core.CapPEQuiet | core.CapBatch | core.CapBlocks,
		Atomics:  fullAtomics,
		Locality: core.AnyHost,
		// Each connection has a progress goroutine at both ends.
		Progress: core.ProgressAuto,
		// One connection per pair, read by one goroutine that applies frames
		// in the order they were queued: fence costs nothing.
		Order:      core.OrderPutPut | core.OrderAtomicAtomic,
		ThreadSafe: true,
		MaxMsgSize: core.Unbounded,
		InjectSize: injectSize,
		// A watch key holds the offset in a region.
		MaxRegionSize: maxRegion - 1,
		// Below loopback: on one host, shared memory wins; across hosts,
		// this is what fits.
		Preference: 50,
		Params:     params,
		Origin:     "built-in",
	}
}

// fullAtomics is what this provider executes: everything, with the same
// sync/atomic operations as the target's own (internal/mem.Atomic). A
// package variable, so the fast path passes a pointer without copying.
var fullAtomics = core.FullAtomics()
