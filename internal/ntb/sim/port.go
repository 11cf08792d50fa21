package sim

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// Port is one end of a simulated link. It implements ntb.Port,
// ntb.Inspector, ntb.PeerWatcher, ntb.WindowExporter and
// ntb.VirtualClock.
type Port struct {
	f    *Fabric
	host *Host
	l    *link
	end  int // 0: the link's first end (a Right or Down port), 1: its second (Left or Up)
	side ntb.Side

	// Under l.mu: the link state of this end and its inbound
	// translations.
	enabled, closed bool
	inbound         [][]byte

	spads [spadCount]atomic.Uint32

	// dbMu guards the doorbell registers; raised are the bits reported
	// since they were last cleared or masked.
	dbMu                  sync.Mutex
	pending, mask, raised uint64

	// out is what the delivery goroutine has to send on events.
	outMu   sync.Mutex
	outLink bool
	outDB   uint64
	kick    chan struct{}
	events  chan ntb.Event
	quit    chan struct{}
	loops   sync.WaitGroup

	dma   [dmaChannels]*dmaChan
	stats struct {
		dbSent, dbEvents, spadReads, spadWrites, peerSpadReads, peerSpadWrites, dmaDescs, dmaBytes atomic.Uint64
	}
}

var (
	_ ntb.Port           = (*Port)(nil)
	_ ntb.Inspector      = (*Port)(nil)
	_ ntb.PeerWatcher    = (*Port)(nil)
	_ ntb.WindowExporter = (*Port)(nil)
	_ ntb.VirtualClock   = (*Port)(nil)
)

func newPort(f *Fabric, h *Host, l *link, end int, side ntb.Side) *Port {
	p := &Port{f: f, host: h, l: l, end: end, side: side,
		inbound: make([][]byte, f.cfg.Windows),
		kick:    make(chan struct{}, 1), events: make(chan ntb.Event, 1), quit: make(chan struct{})}
	for c := range p.dma {
		p.dma[c] = newDMAChan(p, c)
	}
	p.loops.Add(1)
	go p.deliver()
	return p
}

// peer is the other end of the link.
func (p *Port) peer() *Port { return p.l.ends[1-p.end] }

// out is the wire from this end to the peer.
func (p *Port) out() *wire { return p.l.wires[p.end] }

func (p *Port) errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("ntb sim: host %d %s port: %s: %w", p.host.id, p.side, fmt.Sprintf(format, args...), sentinel)
}

// Fabric is the fabric the port is part of.
func (p *Port) Fabric() *Fabric { return p.f }

// Host is the index of the port's host; Link the index of its link.
func (p *Port) Host() int { return p.host.id }
func (p *Port) Link() int { return p.l.k }

// Side says which neighbour the port faces.
func (p *Port) Side() ntb.Side { return p.side }

// VirtualTime reports that the port's costs are virtual time: run under
// testing/synctest, they pass only when every goroutine waits.
func (p *Port) VirtualTime() bool { return true }

// StoreFlight is the model's PostedWrite: the flight of a store through
// a window, which PeerMW's slice cannot charge.
func (p *Port) StoreFlight() time.Duration { return p.f.cfg.Model.PostedWrite }

// LinkIsUp reports whether both ends are enabled and open, the link is
// not forced down and neither host died.
func (p *Port) LinkIsUp() bool {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	return p.l.up
}

// linked returns the link's epoch if it is up and this port open.
func (p *Port) linked(what string) (uint64, error) {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.closed {
		return 0, p.errorf(ntb.ErrClosed, "%s", what)
	}
	if !p.l.up {
		return 0, p.errorf(ntb.ErrLinkDown, "%s", what)
	}
	return p.l.epoch, nil
}

// alive reports whether the link is still up in epoch.
func (p *Port) alive(epoch uint64) bool {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	return p.l.up && p.l.epoch == epoch
}

func (p *Port) setEnabled(on bool, what string) error {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.closed {
		return p.errorf(ntb.ErrClosed, "%s", what)
	}
	p.enabled = on
	p.l.update()
	return nil
}

// LinkEnable allows traffic; the link comes up once the peer enabled it.
func (p *Port) LinkEnable() error { return p.setEnabled(true, "link enable") }

// LinkDisable takes the link down.
func (p *Port) LinkDisable() error { return p.setEnabled(false, "link disable") }

// SetLinkDown forces the port's link down or lifts that (Fabric.SetLinkDown).
func (p *Port) SetLinkDown(down bool) { p.f.SetLinkDown(p.l.k, down) }

// PeerDead reports whether the peer's host was killed.
func (p *Port) PeerDead() bool {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	return p.peer().host.killed
}

// WaitLink blocks until the link is up or timeout passes.
func (p *Port) WaitLink(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		p.l.mu.Lock()
		up, closed, ch := p.l.up, p.closed, p.l.changed
		p.l.mu.Unlock()
		switch {
		case closed:
			return p.errorf(ntb.ErrClosed, "wait for link")
		case up:
			return nil
		}
		select {
		case <-ch:
		case <-t.C:
			return p.errorf(errors.Join(ntb.ErrLinkDown, core.ErrTimeout), "link %d not up within %v", p.l.k, timeout)
		}
	}
}

// Events delivers link and doorbell events; it closes when the port does.
func (p *Port) Events() <-chan ntb.Event { return p.events }

// postLink has a link event delivered.
func (p *Port) postLink() {
	p.outMu.Lock()
	p.outLink = true
	p.outMu.Unlock()
	p.wake()
}

func (p *Port) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// deliver sends what was posted on events, merging doorbells that wait.
func (p *Port) deliver() {
	defer p.loops.Done()
	defer close(p.events)
	for {
		select {
		case <-p.kick:
		case <-p.quit:
			return
		}
		for {
			p.outMu.Lock()
			var ev ntb.Event
			var any bool
			switch {
			case p.outLink:
				p.outLink, ev, any = false, ntb.Event{Kind: ntb.LinkEvent}, true
			case p.outDB != 0:
				ev, any = ntb.Event{Kind: ntb.DoorbellEvent, DB: p.outDB}, true
				p.outDB = 0
			}
			p.outMu.Unlock()
			if !any {
				break
			}
			select {
			case p.events <- ev:
			case <-p.quit:
				return
			}
		}
	}
}

// MWCount is the number of inbound windows.
func (p *Port) MWCount() int { return p.f.cfg.Windows }

// PeerMWCount is the number of outbound windows.
func (p *Port) PeerMWCount() int { return p.f.cfg.Windows }

func (p *Port) checkMW(what string, i int) error {
	if i < 0 || i >= p.f.cfg.Windows {
		return p.errorf(ntb.ErrRange, "%s %d: windows are 0 to %d", what, i, p.f.cfg.Windows-1)
	}
	return nil
}

// MWAlign gives page alignment and the largest window.
func (p *Port) MWAlign(i int) (addrAlign, sizeAlign, maxSize int64, err error) {
	if err := p.checkMW("window align", i); err != nil {
		return 0, 0, 0, err
	}
	return mwAlign, mwAlign, p.f.cfg.MWMax, nil
}

// MWSetTrans points inbound window i at a fresh buffer of size bytes.
func (p *Port) MWSetTrans(i int, size int64) ([]byte, error) {
	if err := p.checkMW("window translation", i); err != nil {
		return nil, err
	}
	if size <= 0 || size > p.f.cfg.MWMax || size%mwAlign != 0 {
		return nil, p.errorf(ntb.ErrRange, "window %d of %d bytes: a multiple of %d up to %d", i, size, mwAlign, p.f.cfg.MWMax)
	}
	b := make([]byte, size)
	return b, p.setInbound(i, b)
}

// MWSetTransMem points inbound window i at m.
func (p *Port) MWSetTransMem(i int, m ntb.Memory) error {
	if err := p.checkMW("window translation", i); err != nil {
		return err
	}
	b := m.Bytes()
	if mm, ok := m.(*memory); ok {
		b = mm.win
	}
	if len(b) == 0 || int64(len(b)) > p.f.cfg.MWMax {
		return p.errorf(ntb.ErrRange, "window %d onto %d bytes: up to %d", i, len(b), p.f.cfg.MWMax)
	}
	return p.setInbound(i, b)
}

func (p *Port) setInbound(i int, b []byte) error {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.closed {
		return p.errorf(ntb.ErrClosed, "window translation")
	}
	p.inbound[i] = b
	return nil
}

// MWClearTrans removes the translation of inbound window i.
func (p *Port) MWClearTrans(i int) error {
	if err := p.checkMW("window clear", i); err != nil {
		return err
	}
	return p.setInbound(i, nil)
}

// PeerMW is the peer's buffer behind its inbound window i: stores into
// it land there at once (a posted write's flight is not charged to
// stores; docs/ntb-sim.md, "What is not modelled").
func (p *Port) PeerMW(i int) ([]byte, error) {
	if err := p.checkMW("peer window", i); err != nil {
		return nil, err
	}
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.closed {
		return nil, p.errorf(ntb.ErrClosed, "peer window %d", i)
	}
	if !p.l.up {
		return nil, p.errorf(ntb.ErrLinkDown, "peer window %d", i)
	}
	b := p.peer().inbound[i]
	if b == nil {
		return nil, p.errorf(ntb.ErrRange, "peer window %d: the peer set no translation", i)
	}
	return b, nil
}

// DBValidMask is the 16 doorbell bits.
func (p *Port) DBValidMask() uint64 { return 1<<dbBits - 1 }

func (p *Port) checkDB(what string, bits uint64) error {
	if bits&^p.DBValidMask() != 0 {
		return p.errorf(ntb.ErrRange, "%s: bits %#x outside the valid mask %#x", what, bits, p.DBValidMask())
	}
	return nil
}

// DBRead returns the pending bits.
func (p *Port) DBRead() uint64 {
	p.dbMu.Lock()
	defer p.dbMu.Unlock()
	return p.pending
}

// DBReadMask returns the masked bits.
func (p *Port) DBReadMask() uint64 {
	p.dbMu.Lock()
	defer p.dbMu.Unlock()
	return p.mask
}

// DBClear clears pending bits.
func (p *Port) DBClear(bits uint64) error {
	if err := p.checkDB("doorbell clear", bits); err != nil {
		return err
	}
	p.dbMu.Lock()
	p.pending &^= bits
	p.raised &^= bits
	p.dbMu.Unlock()
	return nil
}

// DBSetMask masks bits.
func (p *Port) DBSetMask(bits uint64) error {
	if err := p.checkDB("doorbell set mask", bits); err != nil {
		return err
	}
	p.dbMu.Lock()
	p.mask |= bits
	p.raised &^= bits
	p.dbMu.Unlock()
	return nil
}

// DBClearMask unmasks bits; a pending bit that becomes unmasked raises an
// event.
func (p *Port) DBClearMask(bits uint64) error {
	if err := p.checkDB("doorbell clear mask", bits); err != nil {
		return err
	}
	p.dbMu.Lock()
	p.mask &^= bits
	p.raiseLocked()
	p.dbMu.Unlock()
	return nil
}

// raiseLocked reports the pending, unmasked bits not yet reported. Under
// dbMu.
func (p *Port) raiseLocked() {
	fresh := p.pending &^ p.mask &^ p.raised
	if fresh == 0 {
		return
	}
	p.raised |= fresh
	p.stats.dbEvents.Add(1)
	p.outMu.Lock()
	p.outDB |= p.pending &^ p.mask
	p.outMu.Unlock()
	p.wake()
}

// ring sets bits pending on this port, from the peer's PeerDBSet.
func (p *Port) ring(bits uint64) {
	p.dbMu.Lock()
	p.pending |= bits
	p.raiseLocked()
	p.dbMu.Unlock()
}

// PeerDBSet rings doorbell bits on the peer: a posted write that lands
// after the model's OpCost and PostedWrite, and raises its event after
// DoorbellIRQ more. The caller does not wait.
func (p *Port) PeerDBSet(bits uint64) error {
	if err := p.checkDB("peer doorbell set", bits); err != nil {
		return err
	}
	epoch, err := p.linked("peer doorbell set")
	if err != nil {
		return err
	}
	p.stats.dbSent.Add(1)
	m := p.f.cfg.Model
	peer := p.peer()
	time.AfterFunc(m.OpCost+m.PostedWrite+m.DoorbellIRQ, func() {
		if p.alive(epoch) {
			peer.ring(bits)
		}
	})
	return nil
}

// SpadCount is 8.
func (p *Port) SpadCount() int { return spadCount }

func (p *Port) checkSpad(what string, i int) error {
	if i < 0 || i >= spadCount {
		return p.errorf(ntb.ErrRange, "%s %d: scratchpads are 0 to %d", what, i, spadCount-1)
	}
	return nil
}

// SpadRead reads this side's scratchpad i.
func (p *Port) SpadRead(i int) (uint32, error) {
	if err := p.checkSpad("scratchpad read", i); err != nil {
		return 0, err
	}
	p.stats.spadReads.Add(1)
	return p.spads[i].Load(), nil
}

// SpadWrite writes this side's scratchpad i.
func (p *Port) SpadWrite(i int, v uint32) error {
	if err := p.checkSpad("scratchpad write", i); err != nil {
		return err
	}
	p.stats.spadWrites.Add(1)
	p.spads[i].Store(v)
	return nil
}

// PeerSpadRead reads the peer's scratchpad i: a non-posted read, for
// which the caller waits the model's ReadRoundTrip.
func (p *Port) PeerSpadRead(i int) (uint32, error) {
	if err := p.checkSpad("peer scratchpad read", i); err != nil {
		return math.MaxUint32, err
	}
	epoch, err := p.linked("peer scratchpad read")
	if err != nil {
		return math.MaxUint32, err
	}
	time.Sleep(p.f.cfg.Model.ReadRoundTrip)
	v := p.peer().spads[i].Load()
	if !p.alive(epoch) {
		return math.MaxUint32, p.errorf(ntb.ErrLinkDown, "peer scratchpad read %d", i)
	}
	p.stats.peerSpadReads.Add(1)
	return v, nil
}

// PeerSpadWrite writes the peer's scratchpad i: posted, and seen at once,
// so that it stays in order with stores through the windows.
func (p *Port) PeerSpadWrite(i int, v uint32) error {
	if err := p.checkSpad("peer scratchpad write", i); err != nil {
		return err
	}
	if _, err := p.linked("peer scratchpad write"); err != nil {
		return err
	}
	p.peer().spads[i].Store(v)
	p.stats.peerSpadWrites.Add(1)
	return nil
}

// DMAChannels is 4.
func (p *Port) DMAChannels() int { return dmaChannels }

// DMA returns channel c.
func (p *Port) DMA(c int) (ntb.DMAChannel, error) {
	if c < 0 || c >= dmaChannels {
		return nil, p.errorf(ntb.ErrRange, "DMA channel %d: channels are 0 to %d", c, dmaChannels-1)
	}
	return p.dma[c], nil
}

// Stats returns the port's counters.
func (p *Port) Stats() ntb.Stats {
	s := &p.stats
	return ntb.Stats{
		DoorbellsSent: s.dbSent.Load(), DoorbellEvents: s.dbEvents.Load(),
		SpadReads: s.spadReads.Load(), SpadWrites: s.spadWrites.Load(),
		PeerSpadReads: s.peerSpadReads.Load(), PeerSpadWrites: s.peerSpadWrites.Load(),
		DMADescriptors: s.dmaDescs.Load(), DMABytes: s.dmaBytes.Load(),
	}
}

// Close releases the port; the peer sees the link go down.
func (p *Port) Close() error {
	p.l.mu.Lock()
	if p.closed {
		p.l.mu.Unlock()
		return nil
	}
	p.closed = true
	p.l.update()
	p.l.mu.Unlock()
	for _, c := range p.dma {
		c.stop()
	}
	close(p.quit)
	p.loops.Wait()
	return nil
}
