package ntbring

import (
	"fmt"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// Using a link again once it comes back up (ring protocol only).
//
// The cut link's rlink is retired, never reset: DMAs queued before the
// cut may still complete into its rings, and relays may still release
// its entries, and all of that lands in memory the new ring does not use.
// Each end of the link waits until the cut was dealt with on its side
// (its receiver sent its cut notice and stopped, the neighbour's notice
// came and what the neighbour did not take was resent), so no cut notice
// of the old ring can be taken for one of the new. Then it builds a new
// rlink: a fresh inbound ring window (zeroed: both indices at entry 0),
// the region windows pointed at the regions again (the link going down
// reset them), a new epoch, the hello written into the neighbour's
// scratchpads, the neighbour's hello checked and its new window mapped;
// then it writes the two epochs into the neighbour's "mapped" scratchpad
// and waits for the same in its own. Only then, with both ends past the
// hello, does it put the new rlink in use, start its receiver, route the
// short way again and send a repair notice the long way round to the
// other end, on which every host it passes stops routing round the cut. Transfers already on
// their way round the long way simply arrive, and a later single cut is
// survivable again.
//
// A repair that does not finish within the timeout (the link went down
// again, the neighbour never answered) is given up and logged: the ring
// keeps routing round the cut, and the next link-up tries again.

// rspMapped is the scratchpad word an end of a repaired link writes into
// its neighbour's once it has mapped the neighbour's new ring window: the
// two ends' new epochs, xored.
const rspMapped = ringHelloWords

// startRepair repairs old's side in the background, once at a time.
func (p *ringProto) startRepair(old *rlink) {
	if !p.repairing[old.side].CompareAndSwap(false, true) {
		return
	}
	p.repairMu.Lock()
	defer p.repairMu.Unlock()
	select {
	case <-p.stop:
		p.repairing[old.side].Store(false)
		return
	default:
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.repairing[old.side].Store(false)
		start := time.Now()
		if err := p.repair(old); err != nil {
			p.d.log.Info("ntbring: link not repaired, still routing round it", "host", p.d.rank, "side", old.side, "err", err)
			return
		}
		p.d.log.Info("ntbring: link repaired, in use again", "host", p.d.rank, "side", old.side, "took", time.Since(start))
	}()
}

// repair replaces the cut rlink old with a new one once both ends have
// run the hello, and announces the repair round the ring.
func (p *ringProto) repair(old *rlink) error {
	wait := p.repairWait(old.port, time.Now().Add(p.s.timeout))
	if err := wait("the cut to be dealt with", func() bool { return old.resent.Load() && old.rxDone.Load() }); err != nil {
		return err
	}
	l, err := newRlink(old.side, old.port, old.peer, p.s.slotSize)
	if err != nil {
		return err
	}
	if l.port.SpadCount() <= rspMapped {
		return fmt.Errorf("%s port has %d scratchpads, a repair needs %d: %w", l.side, l.port.SpadCount(), rspMapped+1, core.ErrNotSupported)
	}
	if err := l.setInbound(); err != nil {
		return err
	}
	p.exportWindows(l.port)
	if err := p.hello(l); err != nil {
		return err
	}
	if err := wait("the neighbour's hello", func() bool { return l.spadIs(rspMagic, ringHelloMagic) }); err != nil {
		return err
	}
	if err := p.checkHello(l); err != nil {
		return err
	}
	if err := l.mapOutbound(); err != nil {
		return err
	}
	// Both ends compute the same word from the two epochs they agreed on:
	// one left from an earlier attempt never matches.
	mapped := l.epoch ^ l.peerEpoch
	if err := l.port.PeerSpadWrite(rspMapped, mapped); err != nil {
		return l.linkError("write mapped", err)
	}
	if err := wait("the neighbour to map the new ring", func() bool { return l.spadIs(rspMapped, mapped) }); err != nil {
		return err
	}
	if err := l.port.SpadWrite(rspMapped, 0); err != nil {
		return l.linkError("clear mapped", err)
	}
	p.links[l.side].Store(l)
	p.wg.Add(1) // this repair is counted in wg: it cannot be at zero
	go p.receive(l)
	p.learnRepair(linkIndex(p.d.rank, p.d.npes, l.side))
	m := meta{kind: kindRepair, src: uint8(p.d.rank), dst: uint8(l.peer), side: l.side}
	if err := p.sendVia(opposite(l.side), false, m, nil); err != nil {
		p.d.fail(err)
	}
	return nil
}

// repairWait returns a wait for a condition of a repair: it ends with an
// error when the deadline passes, the link goes down, the domain fails or
// the protocol stops.
func (p *ringProto) repairWait(port ntb.Port, deadline time.Time) func(what string, cond func() bool) error {
	return func(what string, cond func() bool) error {
		pause := core.Backoff{Max: time.Millisecond}
		for !cond() {
			if err := p.abort(); err != nil {
				return err
			}
			if !port.LinkIsUp() {
				return fmt.Errorf("waiting for %s: %w", what, ntb.ErrLinkDown)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("waiting for %s: %w", what, core.ErrTimeout)
			}
			pause.Pause()
		}
		return nil
	}
}

// spadIs reports whether l's scratchpad i holds v.
func (l *rlink) spadIs(i int, v uint32) bool {
	w, err := l.port.SpadRead(i)
	return err == nil && w == v
}

// learnRepair records that link k is in use again, if it was the cut.
func (p *ringProto) learnRepair(k int) {
	if p.cut.CompareAndSwap(int32(k), noCut) {
		p.d.log.Info("ntbring: the ring is whole again", "host", p.d.rank, "link", k)
	}
}
