package emu

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/proc"
)

// eventLoop is the port's interrupt controller. It waits on the irq word
// of its side, shared with the peer's process, sleeping on the side's
// interrupt line (irq.go) when it has nothing to do, and on every wake
// it beats the heartbeat, watches the peer's liveness and the link state,
// and raises doorbell bits that are pending, unmasked and not yet
// reported. What it finds goes to deliverLoop, so a slow reader of Events
// never stops the heartbeat.
//
// epoch is the link's down count when the port attached.
func (p *Port) eventLoop(epoch uint32) {
	defer p.loops.Done()
	var (
		wasUp      bool
		lastEpoch  = epoch
		lastBeat   time.Time
		lastHB     uint64
		lastChange = time.Now()
		lastIRQ    time.Time
	)
	for {
		seq := atomic.LoadUint32(p.own.irq())
		select {
		case <-p.quit:
			return
		default:
		}
		now := time.Now()
		if now.Sub(lastBeat) >= p.opts.Poll/2 {
			lastBeat = now
			atomic.AddUint64(p.own.heartbeat(), 1)
			// A heartbeat stalls only while the peer holds its port: one
			// that has not attached yet has no heartbeat to miss.
			hb := atomic.LoadUint64(p.peer.heartbeat())
			if hb != lastHB || atomic.LoadUint32(p.peer.attached()) == 0 {
				lastHB, lastChange = hb, now
			}
			p.watchPeer(now.Sub(lastChange))
		} else if atomic.LoadUint32(p.peer.attached()) == attachedKilled {
			p.peerDead.Store(true)
		}

		// The epoch counts link downs, so one that came and went between
		// two looks is not missed.
		up, ep := p.LinkIsUp(), p.downs()
		if (wasUp && !up) || ep != lastEpoch {
			// PLX resets the link side's registers on a link down: the
			// inbound translations are gone.
			p.win.reset()
		}
		if up != wasUp || ep != lastEpoch {
			p.post(true, 0)
		}
		wasUp, lastEpoch = up, ep
		p.scanDoorbells()
		if p.waitIRQ(seq, lastIRQ) {
			lastIRQ = time.Now()
		}
	}
}

// watchPeer marks the peer dead when its process is gone, it was killed,
// or its heartbeat has stood still for DeadAfter (stalled being how long).
func (p *Port) watchPeer(stalled time.Duration) {
	pid := atomic.LoadUint32(p.peer.attached())
	switch {
	case pid == 0:
		return // not attached yet, or closed: the link is down, nobody died
	case pid == attachedKilled,
		pid != p.pid && !proc.Alive(int(pid)),
		stalled > p.opts.DeadAfter:
		if !p.peerDead.Swap(true) {
			p.kickOwn()
		}
	}
}

// scanDoorbells raises the pending, unmasked bits not yet reported.
func (p *Port) scanDoorbells() {
	p.dbMu.Lock()
	fire := atomic.LoadUint32(p.own.pending()) &^ atomic.LoadUint32(p.own.mask()) &^ p.raised
	p.raised |= fire
	p.dbMu.Unlock()
	if fire != 0 {
		p.own.count(statDBEvents, 1)
		p.post(false, fire)
	}
}

// post hands a link event or doorbell bits to deliverLoop, merging them
// with what it has not yet sent.
func (p *Port) post(link bool, db uint32) {
	p.outMu.Lock()
	p.outLink = p.outLink || link
	p.outDB |= db
	p.outMu.Unlock()
	select {
	case p.outKick <- struct{}{}:
	default:
	}
}

// deliverLoop sends what eventLoop posts on the events channel, link
// events first, and closes the channel when the port closes.
func (p *Port) deliverLoop() {
	defer p.loops.Done()
	defer close(p.events)
	for {
		select {
		case <-p.quit:
			return
		case <-p.outKick:
		}
		p.outMu.Lock()
		link, db := p.outLink, p.outDB
		p.outLink, p.outDB = false, 0
		p.outMu.Unlock()
		if link && !p.send(ntb.Event{Kind: ntb.LinkEvent}) {
			return
		}
		if db != 0 && !p.send(ntb.Event{Kind: ntb.DoorbellEvent, DB: uint64(db)}) {
			return
		}
	}
}

func (p *Port) send(e ntb.Event) bool {
	select {
	case p.events <- e:
		return true
	case <-p.quit:
		return false
	}
}

// waitIRQ returns when the irq word is no longer seq, reporting true, or
// after Poll. It polls a little first (a doorbell ping-pong then never
// sleeps), then sleeps on its interrupt line.
//
// The sleep is cut into steps, and the irq word is looked at after each.
// A read of the FIFO is woken through Go's network poller, which the
// scheduler consults only when it runs out of runnable goroutines (or
// every 10 ms): while the process's other goroutines keep its processors
// busy, polling and yielding, a wake-up written into the FIFO waits for
// them. The read's deadline is a timer, which the scheduler runs on time
// however busy it is. So the steps are irqStep long until irqBusy has
// passed since the last kick (last), then double up to Poll: a busy port
// in a busy process sees a kick within a step, an idle process at once
// through the FIFO, and an idle port costs a few wake-ups.
func (p *Port) waitIRQ(seq uint32, last time.Time) bool {
	irq := p.own.irq()
	for range spinPolls {
		if atomic.LoadUint32(irq) != seq {
			return true
		}
		runtime.Gosched()
	}
	atomic.StoreUint32(p.own.sleeping(), 1)
	defer atomic.StoreUint32(p.own.sleeping(), 0)
	deadline := time.Now().Add(p.opts.Poll)
	step := irqStep
	for atomic.LoadUint32(irq) == seq {
		now := time.Now()
		left := deadline.Sub(now)
		if left <= 0 {
			return false
		}
		if now.Sub(last) > irqBusy {
			step = min(2*step, p.opts.Poll)
		}
		p.ownIRQ.wait(min(step, left))
	}
	return true
}

// irqStep is a sleeping port's step while it is busy: about the time a
// relayed piece of a large transfer takes to cross, so a relay whose
// process's processors are kept busy still passes pieces on about as
// fast as they come. irqBusy is how long after a kick a port counts as
// busy.
const (
	irqStep = 20 * time.Microsecond
	irqBusy = 2 * time.Millisecond
)
