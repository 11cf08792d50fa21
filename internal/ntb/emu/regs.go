package emu

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

// regs is one side's register block inside a mapping of a link file.
type regs struct{ b []byte }

func (r regs) u32(off int) *uint32 { return mem.Word32(r.b, off) }
func (r regs) u64(off int) *uint64 { return mem.Word64(r.b, off) }

func (r regs) attached() *uint32  { return r.u32(regAttached) }
func (r regs) enabled() *uint32   { return r.u32(regEnabled) }
func (r regs) heartbeat() *uint64 { return r.u64(regHeartbeat) }
func (r regs) irq() *uint32       { return r.u32(regIRQ) }
func (r regs) sleeping() *uint32  { return r.u32(regSleeping) }
func (r regs) pending() *uint32   { return r.u32(regDBPending) }
func (r regs) mask() *uint32      { return r.u32(regDBMask) }
func (r regs) spad(i int) *uint32 { return r.u32(regSpads + 4*i) }
func (r regs) stat(i int) *uint64 { return r.u64(regStats + 8*i) }

// The counters, in the order of ntb.Stats.
const (
	statDBSent = iota
	statDBEvents
	statSpadReads
	statSpadWrites
	statPeerSpadReads
	statPeerSpadWrites
	statDMADesc
	statDMABytes
)

func (r regs) count(i int, n uint64) { atomic.AddUint64(r.stat(i), n) }

func (r regs) stats() ntb.Stats {
	s := func(i int) uint64 { return atomic.LoadUint64(r.stat(i)) }
	return ntb.Stats{
		DoorbellsSent: s(statDBSent), DoorbellEvents: s(statDBEvents),
		SpadReads: s(statSpadReads), SpadWrites: s(statSpadWrites),
		PeerSpadReads: s(statPeerSpadReads), PeerSpadWrites: s(statPeerSpadWrites),
		DMADescriptors: s(statDMADesc), DMABytes: s(statDMABytes),
	}
}

// window reads inbound window i's register as a seqlock reader: the
// generation, the size, and the generation again must agree.
func (r regs) window(i int) window {
	gen, size := r.u32(regWindows+windowSlot*i), r.u64(regWindows+windowSlot*i+8)
	for {
		g := atomic.LoadUint32(gen)
		if g == 0 {
			return window{}
		}
		s := atomic.LoadUint64(size)
		if atomic.LoadUint32(gen) == g {
			return window{Gen: g, Size: s}
		}
	}
}

// setWindow publishes window i's register as the seqlock's only writer.
func (r regs) setWindow(i int, w window) {
	atomic.StoreUint32(r.u32(regWindows+windowSlot*i), 0)
	atomic.StoreUint64(r.u64(regWindows+windowSlot*i+8), w.Size)
	atomic.StoreUint32(r.u32(regWindows+windowSlot*i), w.Gen)
}
