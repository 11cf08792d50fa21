package ntbring

import (
	"errors"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

// exportRegion implements regionExporter: region idx lives in memory
// registered with the device, and inbound window 1+idx of each port is
// pointed at it where the port has that window and it is large enough,
// so that the neighbours' puts land in it with no copy on this side.
// Without a window the region still works: puts then come through the
// ring. A device that cannot register memory gets the domain's own.
func (p *ringProto) exportRegion(idx, size int) ([]byte, func() error, error) {
	if p.ports.newMemory == nil {
		return nil, nil, nil
	}
	m, err := p.ports.newMemory(size)
	if err != nil {
		return nil, nil, err
	}
	w := p.window(idx, 0)
	p.exportMu.Lock()
	p.exported[w] = m
	p.exportMu.Unlock()
	for _, l := range p.all() {
		p.exportWindow(l.port, w, m)
	}
	closeRegion := func() error {
		p.exportMu.Lock()
		delete(p.exported, w)
		p.exportMu.Unlock()
		return m.Close()
	}
	return m.Bytes(), closeRegion, nil
}

// window is the inbound window of a port onto region idx of the host's
// PE j (its index among the host's PEs): 1+idx at one PE per host; with
// lanes, each lane's node has one per PE of its host, so that a put to
// any of them lands through a window.
func (p *ringProto) window(idx, j int) int { return 1 + idx*p.d.lanes + j }

// regionWindow is l's neighbour's window onto region idx of its host's
// PE j, or nil.
func (p *ringProto) regionWindow(l *rlink, idx uint8, j int) []byte {
	return l.windowAt(p.window(int(idx), j))
}

// exportWindow points port's inbound window w at memory m, where the
// port has that window.
func (p *ringProto) exportWindow(port ntb.Port, w int, m ntb.Memory) {
	ex, ok := port.(ntb.WindowExporter)
	if !ok || w >= port.MWCount() {
		return
	}
	if err := ex.MWSetTransMem(w, m); err != nil {
		p.d.log.Info("ntbring: region without a window, its puts come through the ring", "host", p.d.rank, "window", w, "err", err)
	}
}

// exportWindows points port's region windows at the regions again: a
// link that went down reset its inbound translations.
func (p *ringProto) exportWindows(port ntb.Port) {
	p.exportMu.Lock()
	defer p.exportMu.Unlock()
	for w, m := range p.exported {
		p.exportWindow(port, w, m)
	}
}

// putDirect implements directPutter: a put to a neighbour with a window
// onto the region is written straight into that host's region (stores
// for small puts, DMA for large ones), then a landed notice wakes its
// waiters, unless one is still on its way (noticePending): a stream of
// puts costs one notice per wake-up, not one per put. It is complete when
// putDirect returns; no ack comes back.
// Puts to hosts further away report false and go through the ring, and
// so does a put across a link that is cut, or went down before the put's
// bytes were all across: it goes round the cut. pe is a host and j the
// PE among its PEs (with lanes; 0 otherwise): the lane's node there has
// a window onto each of its host's PEs, and the landed notice names j.
func (p *ringProto) putDirect(pe, j int, reg *region, off int, src []byte) (bool, error) {
	n := len(src)
	if isValue(off, n) {
		return p.putValueDirect(pe, j, reg, off, mem.LoadValue(src, 0, n), n)
	}
	l, win := p.directTo(pe, j, reg, off, n)
	if win == nil {
		return false, nil
	}
	w := p.dmaWaits.Get().(*dmaWait)
	err := l.copyOut(win[off:off+n], src, w.done, w.cb)
	p.dmaWaits.Put(w)
	if isCut(err) {
		return false, nil
	}
	if err != nil {
		return true, l.linkError("DMA", err)
	}
	return p.landedDirect(l, pe, j, reg, off, n)
}

// putValueDirect implements valuePutter: a PutValue that putDirect would
// complete, its value written with one store, never seen torn.
func (p *ringProto) putValueDirect(pe, j int, reg *region, off int, v uint64, size int) (bool, error) {
	l, win := p.directTo(pe, j, reg, off, size)
	if win == nil {
		return false, nil
	}
	mem.StoreValue(win, off, v, size)
	return p.landedDirect(l, pe, j, reg, off, size)
}

// directTo returns the link to neighbour pe and the window onto its PE
// j's region reg, if n bytes at off can go straight there; a nil window
// otherwise (pe is further away, the link is down, no window).
func (p *ringProto) directTo(pe, j int, reg *region, off, n int) (*rlink, []byte) {
	side, hops := p.d.topo.hopsTo(p.d.rank, pe)
	if hops != 1 {
		return nil, nil
	}
	l := p.link(side)
	if l.down.Load() {
		return nil, nil
	}
	win := p.regionWindow(l, uint8(reg.idx), j)
	if win == nil || off+n > len(win) {
		return nil, nil
	}
	return l, win
}

// landedDirect finishes a put of n bytes at off that went straight into the
// window of link l: the link must still be up after the stores, and the
// landed notice goes out unless one is still on its way.
func (p *ringProto) landedDirect(l *rlink, pe, j int, reg *region, off, n int) (bool, error) {
	pending := l.tx.noticePending() // orders the stores before the look at the link
	if !l.port.LinkIsUp() {
		return false, nil
	}
	if pending {
		return true, nil
	}
	i, err := l.waitCredit(true, p.s.timeout, p.abort)
	if errors.Is(err, errCut) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	atomic.StoreUint32(l.tx.notice, i+1)
	m := meta{kind: kindLanded, src: uint8(p.d.rank), dst: uint8(pe), dpe: uint8(j), region: uint8(reg.idx), off: uint32(off), size: uint32(n)}
	return true, l.put(i, m, nil)
}

// putDirectAsync implements asyncPutter for puts that go by DMA straight
// into the neighbour's heap: the DMA is queued and the put returns; its
// completion sends the landed notice (through the forwarder if the ring
// is full, so it never blocks). A put whose DMA fails as the link goes
// down, or whose link is down after it, is redone another way.
func (p *ringProto) putDirectAsync(pe, j int, reg *region, off int, src []byte, done func(redo bool, err error)) bool {
	side, hops := p.d.topo.hopsTo(p.d.rank, pe)
	if hops != 1 || len(src) <= pioMax {
		return false
	}
	l := p.link(side)
	if l.down.Load() {
		return false
	}
	win := p.regionWindow(l, uint8(reg.idx), j)
	if win == nil || off+len(src) > len(win) {
		return false
	}
	m := meta{kind: kindLanded, src: uint8(p.d.rank), dst: uint8(pe), dpe: uint8(j), region: uint8(reg.idx), off: uint32(off), size: uint32(len(src))}
	landed := func(err error) {
		switch {
		case isCut(err) || err == nil && !l.port.LinkIsUp():
			done(true, nil)
		case err != nil:
			done(false, l.linkError("DMA", err))
		default:
			p.notifyLanded(l, m)
			done(false, nil)
		}
	}
	// Unlike pieces through the ring, which a relay forwards in order, a
	// put straight into the heap need not wait for the one before it:
	// spread over the channels, one's completion overlaps the next's
	// copy.
	if err := l.dmaAsync(win[off:off+len(src)], src, uint32(p.lenders.Add(1)), landed); err != nil {
		landed(err)
	}
	return true
}

// dmaWait is a completion channel and its callback, pooled for callers
// that own no ring entry. The pool is the domain's (ringProto.dmaWaits):
// a channel made by one domain must not serve another, which may run in
// another testing/synctest bubble.
type dmaWait struct {
	done chan error
	cb   func(error)
}

func newDMAWait() any {
	c := make(chan error, 1)
	return &dmaWait{done: c, cb: func(err error) { c <- err }}
}

// The barriers GOSHMEM_NTBRING_BARRIER chooses for the ring protocol.
const (
	barrierRing          = "ring"
	barrierDissemination = "dissemination"
)

// barrier implements protocol.
func (p *ringProto) barrier(abort func() error) error {
	if p.s.barrier == barrierRing {
		return doorbellBarrier(p.d.rank, p.link(ntb.Right).port, p.link(ntb.Right).peer, &p.bar, abort)
	}
	return p.dissemination(abort)
}

// dissemination is the dissemination barrier over the rings: in round k,
// host i signals host i+2^k (relayed by the hosts between, the shorter
// way round) and waits for the signal of host i-2^k. After ceil(log2 n)
// rounds every host has heard, directly or not, from every other.
//
// rounds[k] counts the signals of round k that reached this host. A
// host sends one per barrier and round, and cannot be a barrier ahead in
// a round before this host has had its signal of the barrier before, so
// waiting for the count to reach the barrier's number is enough.
type dissemination struct {
	gen    uint64 // barriers entered, by the (single) caller
	rounds [maxRounds]atomic.Uint64
	ev     core.Event
}

func (b *dissemination) signal(round int) {
	b.rounds[round].Add(1)
	b.ev.Notify()
}

func (p *ringProto) dissemination(abort func() error) error {
	d, b := p.d, &p.dis
	b.gen++
	gen := b.gen
	for k, dist := 0, 1; dist < d.npes; k, dist = k+1, dist<<1 {
		to := (d.rank + dist) % d.npes
		if err := p.send(meta{kind: kindBarrier, src: uint8(d.rank), dst: uint8(to), round: uint8(k)}, nil); err != nil {
			return err
		}
		if err := b.ev.Wait(func() bool { return b.rounds[k].Load() >= gen }, 0, abort); err != nil {
			return err
		}
	}
	return nil
}
