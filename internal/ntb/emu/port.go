package emu

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
)

// attachedKilled in a side's attached word says its holder was killed by
// fault injection in a ring of goroutines, where no process dies.
const attachedKilled = math.MaxUint32

// Port is one emulated NT port: one side of one link file. It implements
// ntb.Port and ntb.Inspector.
type Port struct {
	host, link int
	side       ntb.Side
	opts       *Options
	hdr        header
	file       []byte // the mapping of the link file, owned
	// shared is the link file of lane 0 of this link, whose link words
	// every lane of the link obeys (lanes.go): file itself without lanes
	// and on lane 0, else a mapping of its own, owned.
	shared    []byte
	own, peer regs
	// ownIRQ and peerIRQ are the sides' interrupt lines (irq.go).
	ownIRQ, peerIRQ *irqLine
	dir             string
	pid             uint32

	closed atomic.Bool
	users  atomic.Int32  // uses of the mappings in progress (enter)
	quit   chan struct{} // closed by shutdown
	loops  sync.WaitGroup

	// cross is held for reading by every operation that crosses the link
	// and for writing by LinkDisable, so that nothing crosses after it.
	cross sync.RWMutex

	// peerDead is set by the event goroutine when the peer's process is
	// gone or its heartbeat stopped; it stays set.
	peerDead atomic.Bool

	// dbMu orders the local doorbell operations with the event goroutine's
	// scan; raised holds the bits reported since they were last cleared
	// or masked.
	dbMu   sync.Mutex
	raised uint32

	// out is the delivery state: what the event goroutine found and the
	// delivery goroutine has not yet sent on events.
	outMu   sync.Mutex
	outLink bool
	outDB   uint32
	outKick chan struct{}
	events  chan ntb.Event

	win windows
	dma [dmaChannels]*dmaChan
	// busyUntil is when the port's outbound DMA bandwidth is next free
	// (Unix nanoseconds), under the timing model.
	busyUntil atomic.Int64
}

var (
	_ ntb.Port        = (*Port)(nil)
	_ ntb.Inspector   = (*Port)(nil)
	_ ntb.PeerWatcher = (*Port)(nil)
)

// newLanePort makes the port of side s over the mapping file of link k,
// validated, and attaches it: it owns file from now on, and shared, if
// not nil, lane 0's link file of a partitioned device (lanes.go).
func newLanePort(dir string, host, k int, s ntb.Side, file, shared []byte, hdr header, opts *Options) (*Port, error) {
	ownOff, peerOff := offSides, offSides+sideSize // side A: host k's Right
	ownSide := 0
	if s == ntb.Left {
		ownOff, peerOff, ownSide = peerOff, ownOff, 1
	}
	link := LinkPath(dir, opts.Tag, k)
	ownIRQ, err := openIRQ(irqPath(link, ownSide))
	if err != nil {
		return nil, err
	}
	peerIRQ, err := openIRQ(irqPath(link, 1-ownSide))
	if err != nil {
		return nil, errors.Join(err, ownIRQ.close())
	}
	p := &Port{
		host: host, link: k, side: s, opts: opts, hdr: hdr, file: file, shared: file, dir: dir,
		own:     regs{file[ownOff : ownOff+sideSize]},
		peer:    regs{file[peerOff : peerOff+sideSize]},
		ownIRQ:  ownIRQ,
		peerIRQ: peerIRQ,
		pid:     uint32(os.Getpid()),
		quit:    make(chan struct{}),
		outKick: make(chan struct{}, 1),
		events:  make(chan ntb.Event, 1),
	}
	if shared != nil {
		p.shared = shared
	}
	p.win.init(p)
	for c := range p.dma {
		p.dma[c] = newDMAChan(p, c)
	}
	atomic.StoreUint32(p.own.attached(), p.pid)
	p.kickPeer()
	p.loops.Add(2)
	go p.eventLoop(p.downs())
	go p.deliverLoop()
	return p, nil
}

// kickOwn and kickPeer wake this side's and the peer side's event
// goroutines (kick).
func (p *Port) kickOwn()  { kick(p.own, p.ownIRQ) }
func (p *Port) kickPeer() { kick(p.peer, p.peerIRQ) }

// Host is the index of the port's host in the ring.
func (p *Port) Host() int { return p.host }

// Link is the index of the port's link: link k joins host k's Right port
// and host k+1's Left port.
func (p *Port) Link() int { return p.link }

// Side says which neighbour the port faces.
func (p *Port) Side() ntb.Side { return p.side }

// errorf wraps a sentinel with what was attempted on which port.
func (p *Port) errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("ntb emu: host %d %s port: %s: %w", p.host, p.side, fmt.Sprintf(format, args...), sentinel)
}

// check returns ErrClosed once the port is closed.
func (p *Port) check(what string) error {
	if p.closed.Load() {
		return p.errorf(ntb.ErrClosed, "%s", what)
	}
	return nil
}

// enter starts a use of the port's mappings (its registers and windows)
// and reports whether the port is open; a use that entered ends with
// leave. shutdown marks the port closed and then waits for the uses that
// entered before it unmaps anything, so a call racing with Close returns
// ErrClosed or completes, and never touches unmapped memory.
func (p *Port) enter() bool {
	p.users.Add(1)
	if p.closed.Load() {
		p.users.Add(-1)
		return false
	}
	return true
}

func (p *Port) leave() { p.users.Add(-1) }

// use is enter for a method that returns an error: ErrClosed, or nil
// after entering.
func (p *Port) use(what string) error {
	if !p.enter() {
		return p.errorf(ntb.ErrClosed, "%s", what)
	}
	return nil
}

// LinkIsUp reports whether both sides hold their ports and enabled the
// link, the link is not forced down, and the peer lives.
func (p *Port) LinkIsUp() bool {
	if p.peerDead.Load() || !p.enter() {
		return false
	}
	defer p.leave()
	pa := atomic.LoadUint32(p.peer.attached())
	return atomic.LoadUint32(p.own.enabled()) != 0 && atomic.LoadUint32(p.peer.enabled()) != 0 &&
		pa != 0 && pa != attachedKilled && atomic.LoadUint32(p.forced()) == 0
}

func (p *Port) forced() *uint32  { return regs{p.shared}.u32(offForced) }
func (p *Port) epoch() *uint32   { return regs{p.file}.u32(offEpoch) }
func (p *Port) forcedN() *uint32 { return regs{p.shared}.u32(offForcedN) }

// laned reports whether the port is a lane other than 0 of a partitioned
// device, which obeys lane 0's link words.
func (p *Port) laned() bool { return &p.shared[0] != &p.file[0] }

// downs counts the link's downs as this port sees them: its own file's
// epoch, and the forced downs of the link's lane 0 file, which every lane
// bumps (lane 0 too: a down forced through another lane bumps only that
// lane's epoch). So a down forced from any lane is seen by every port's
// event loop even when it never looked while the link was up (the link
// came up, a caller saw it, and it went down between two looks), and one
// that came and went between two looks is not missed. The sum only has
// to change on every down.
func (p *Port) downs() uint32 {
	return atomic.LoadUint32(p.epoch()) + atomic.LoadUint32(p.forcedN())
}

// PeerDead reports whether the peer's host died: its process is gone, it
// was killed by fault injection, or its heartbeat stopped. A link that is
// merely down, or a peer that closed its port, is not a dead peer.
func (p *Port) PeerDead() bool { return p.peerDead.Load() }

// LinkEnable allows traffic across the link; the link comes up once the
// peer has enabled it too.
func (p *Port) LinkEnable() error {
	if err := p.use("link enable"); err != nil {
		return err
	}
	defer p.leave()
	atomic.StoreUint32(p.own.enabled(), 1)
	p.kickOwn()
	p.kickPeer()
	return nil
}

// LinkDisable takes the link down. When it returns, no operation of this
// port crosses the link any more; the peer sees the link go down.
func (p *Port) LinkDisable() error {
	if err := p.use("link disable"); err != nil {
		return err
	}
	defer p.leave()
	p.cross.Lock()
	atomic.StoreUint32(p.own.enabled(), 0)
	atomic.AddUint32(p.epoch(), 1)
	p.cross.Unlock()
	p.kickOwn()
	p.kickPeer()
	return nil
}

// SetLinkDown forces the link down (true) or lifts that (false), from
// either side, as fault injection does: both sides see the link go down
// and their inbound translations reset.
func (p *Port) SetLinkDown(down bool) error {
	if err := p.use("force link state"); err != nil {
		return err
	}
	defer p.leave()
	if down {
		p.cross.Lock()
		if atomic.SwapUint32(p.forced(), 1) == 0 {
			atomic.AddUint32(p.epoch(), 1)
			atomic.AddUint32(p.forcedN(), 1)
		}
		p.cross.Unlock()
	} else {
		atomic.StoreUint32(p.forced(), 0)
	}
	p.kickOwn()
	p.kickPeer()
	return nil
}

// WaitLink blocks until the link is up or timeout passes; then it returns
// an error wrapping ntb.ErrLinkDown and core.ErrTimeout.
func (p *Port) WaitLink(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var pause core.Backoff
	for !p.LinkIsUp() {
		if err := p.check("wait for link"); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return p.errorf(errors.Join(ntb.ErrLinkDown, core.ErrTimeout), "link %d not up within %v", p.link, timeout)
		}
		pause.Pause()
	}
	return nil
}

// Events delivers link and doorbell events; it is closed when the port
// closes.
func (p *Port) Events() <-chan ntb.Event { return p.events }

// DBValidMask is the set of the 16 doorbell bits.
func (p *Port) DBValidMask() uint64 { return 1<<dbBits - 1 }

// checkDB checks bits and enters the port (see use).
func (p *Port) checkDB(what string, bits uint64) error {
	if bits&^p.DBValidMask() != 0 {
		return p.errorf(ntb.ErrRange, "%s: bits %#x outside the valid mask %#x", what, bits, p.DBValidMask())
	}
	return p.use(what)
}

// DBRead returns the pending doorbell bits.
func (p *Port) DBRead() uint64 {
	if !p.enter() {
		return 0
	}
	defer p.leave()
	return uint64(atomic.LoadUint32(p.own.pending()))
}

// DBReadMask returns the masked doorbell bits.
func (p *Port) DBReadMask() uint64 {
	if !p.enter() {
		return 0
	}
	defer p.leave()
	return uint64(atomic.LoadUint32(p.own.mask()))
}

// DBClear clears pending bits; a bit the peer sets again raises a new
// event.
func (p *Port) DBClear(bits uint64) error {
	if err := p.checkDB("doorbell clear", bits); err != nil {
		return err
	}
	defer p.leave()
	p.dbMu.Lock()
	atomic.AndUint32(p.own.pending(), ^uint32(bits))
	p.raised &^= uint32(bits)
	p.dbMu.Unlock()
	return nil
}

// DBSetMask masks bits: they stay pending but raise no event.
func (p *Port) DBSetMask(bits uint64) error {
	if err := p.checkDB("doorbell set mask", bits); err != nil {
		return err
	}
	defer p.leave()
	p.dbMu.Lock()
	atomic.OrUint32(p.own.mask(), uint32(bits))
	p.raised &^= uint32(bits)
	p.dbMu.Unlock()
	return nil
}

// DBClearMask unmasks bits; a pending bit that becomes unmasked raises an
// event.
func (p *Port) DBClearMask(bits uint64) error {
	if err := p.checkDB("doorbell clear mask", bits); err != nil {
		return err
	}
	defer p.leave()
	p.dbMu.Lock()
	atomic.AndUint32(p.own.mask(), ^uint32(bits))
	p.dbMu.Unlock()
	p.kickOwn()
	return nil
}

// PeerDBSet rings doorbell bits on the peer: a posted write.
func (p *Port) PeerDBSet(bits uint64) error {
	if err := p.checkDB("peer doorbell set", bits); err != nil {
		return err
	}
	defer p.leave()
	p.cross.RLock()
	defer p.cross.RUnlock()
	if !p.LinkIsUp() {
		return p.errorf(ntb.ErrLinkDown, "peer doorbell set %#x", bits)
	}
	atomic.OrUint32(p.peer.pending(), uint32(bits))
	p.kickPeer()
	p.own.count(statDBSent, 1)
	return nil
}

// SpadCount is 8.
func (p *Port) SpadCount() int { return spadCount }

// checkSpad checks i and enters the port (see use).
func (p *Port) checkSpad(what string, i int) error {
	if i < 0 || i >= spadCount {
		return p.errorf(ntb.ErrRange, "%s %d: scratchpads are 0 to %d", what, i, spadCount-1)
	}
	return p.use(what)
}

// SpadRead reads this side's scratchpad i.
func (p *Port) SpadRead(i int) (uint32, error) {
	if err := p.checkSpad("scratchpad read", i); err != nil {
		return 0, err
	}
	defer p.leave()
	p.own.count(statSpadReads, 1)
	return atomic.LoadUint32(p.own.spad(i)), nil
}

// SpadWrite writes this side's scratchpad i.
func (p *Port) SpadWrite(i int, v uint32) error {
	if err := p.checkSpad("scratchpad write", i); err != nil {
		return err
	}
	defer p.leave()
	atomic.StoreUint32(p.own.spad(i), v)
	p.own.count(statSpadWrites, 1)
	return nil
}

// PeerSpadRead reads the peer's scratchpad i across the link: a
// non-posted read that costs the model's round trip. Across a down link
// it returns 0xFFFFFFFF and an error wrapping ntb.ErrLinkDown.
func (p *Port) PeerSpadRead(i int) (uint32, error) {
	if err := p.checkSpad("peer scratchpad read", i); err != nil {
		return math.MaxUint32, err
	}
	defer p.leave()
	p.cross.RLock()
	defer p.cross.RUnlock()
	if !p.LinkIsUp() {
		return math.MaxUint32, p.errorf(ntb.ErrLinkDown, "peer scratchpad read %d", i)
	}
	delay(p.opts.Model.SpadReadLatency)
	v := atomic.LoadUint32(p.peer.spad(i))
	if !p.LinkIsUp() {
		return math.MaxUint32, p.errorf(ntb.ErrLinkDown, "peer scratchpad read %d", i)
	}
	p.own.count(statPeerSpadReads, 1)
	return v, nil
}

// PeerSpadWrite writes the peer's scratchpad i: a posted write.
func (p *Port) PeerSpadWrite(i int, v uint32) error {
	if err := p.checkSpad("peer scratchpad write", i); err != nil {
		return err
	}
	defer p.leave()
	p.cross.RLock()
	defer p.cross.RUnlock()
	if !p.LinkIsUp() {
		return p.errorf(ntb.ErrLinkDown, "peer scratchpad write %d", i)
	}
	atomic.StoreUint32(p.peer.spad(i), v)
	p.own.count(statPeerSpadWrites, 1)
	return nil
}

// Stats returns the port's counters.
func (p *Port) Stats() ntb.Stats {
	if !p.enter() {
		return ntb.Stats{}
	}
	defer p.leave()
	return p.own.stats()
}

// Close releases the port; the peer sees the link go down. The slices of
// its windows (MWSetTrans and PeerMW) must not be touched afterwards.
func (p *Port) Close() error { return p.shutdown(false) }

// shutdown stops the port. A killed port leaves its side marked killed,
// as a process that died leaves it holding a dead pid.
//
// Close is called by a user done with the port; a kill (Host.Kill, of a
// host sharing the process) comes while the host's own goroutines may
// still read its registers and write through its windows. So a killed
// port does not unmap its link file and windows but revokes them
// (sys.Revoke): those goroutines then see zeros and write into nothing,
// as a dead host's would reach nobody, instead of faulting the process.
// The revoked mappings stay until the process ends.
func (p *Port) shutdown(killed bool) error {
	if p.closed.Swap(true) {
		return nil
	}
	mark := uint32(0)
	if killed {
		mark = attachedKilled
	}
	p.cross.Lock()
	atomic.StoreUint32(p.own.attached(), mark)
	atomic.AddUint32(p.epoch(), 1)
	p.cross.Unlock()
	p.kickPeer()
	close(p.quit)
	p.kickOwn()
	errs := make([]error, 0, 2)
	for _, c := range p.dma {
		c.stop()
	}
	p.loops.Wait()
	for p.users.Load() != 0 { // the uses that entered before closed was set
		runtime.Gosched()
	}
	errs = append(errs, p.win.release(killed), p.ownIRQ.close(), p.peerIRQ.close())
	if killed {
		return errors.Join(append(errs, sys.Revoke(p.file))...)
	}
	atomic.StoreUint32(p.own.enabled(), 0)
	if p.laned() {
		errs = append(errs, sys.Unmap(p.shared))
	}
	return errors.Join(append(errs, sys.Unmap(p.file))...)
}
