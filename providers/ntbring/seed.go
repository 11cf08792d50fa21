package ntbring

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// seed is the protocol of the seed papers: per-transfer metadata in the
// receiver's scratchpads, one doorbell per worker, a pool of workers per
// host that land payloads, answer requests and relay transfers for other
// hosts through the bypass windows, and the two-round ring barrier on the
// BARRIER_START and BARRIER_END doorbells.
//
// Goroutines, all stopped by close: one dispatcher per port, reading its
// events; workers, woken by their doorbell on either port; forwarders,
// sending what workers queued (relays and answers). Workers never wait for
// a link: they send only when the link is free at the first look
// (trySend), and queue otherwise. A worker that waited for a busy link
// while holding its own inbound slot could close a cycle of waits around
// the ring.
type seed struct {
	d     *domain
	s     settings
	ports *ringPorts
	links [2]*link // by ntb.Side
	lim   metaLimits

	workers []*worker
	fwd     fwdQueue

	bar ringBarrier

	stop chan struct{}
	wg   sync.WaitGroup // workers and forwarders: stopped by stop
	dwg  sync.WaitGroup // the dispatchers: stopped by closing the ports
}

// worker n serves doorbell bit n on both ports.
type worker struct {
	n    int
	kick chan struct{}
	// sides has bit s set when ntb.Side s rang since the worker last looked.
	sides atomic.Uint32
}

func newSeed(d *domain, r *ringPorts, s settings) (*seed, error) {
	p := &seed{d: d, s: s, ports: r, stop: make(chan struct{}),
		lim: metaLimits{self: d.rank, hosts: d.npes, slots: s.workers, slotSize: s.slotSize}}
	p.fwd.wake = make(chan struct{}, 1)
	for side, port := range []ntb.Port{r.port(ntb.Left), r.port(ntb.Right)} {
		l, err := newLink(ntb.Side(side), port, neighbour(d.rank, d.npes, ntb.Side(side)), s.workers, s.slotSize)
		if err != nil {
			return nil, err
		}
		p.links[side] = l
	}
	return p, nil
}

// setup is the seeds' initialisation: set the inbound windows, exchange
// host ids and window sizes through the scratchpads, map the neighbours'
// windows, then start the goroutines and unmask the doorbells. Every step
// ends in core.Agree (setupLinks), so all hosts fail together.
func (p *seed) setup() error {
	if err := setupLinks(p.d, p.ports, p.s, p.links[:], p.hello, p.checkHello); err != nil {
		return err
	}
	p.start()
	return nil
}

// linkUpTimeout bounds the wait for a neighbour to enable its side of a
// link at start-up. Hosts start at different times, by seconds on a loaded
// machine, so it is longer than an operation's timeout; the emulator waits
// as long for a neighbour's link file.
const linkUpTimeout = time.Minute

// The scratchpad words of the hello exchange, written by each host into
// its neighbour's scratchpads. They are zeroed before any transfer.
const (
	spadMagic = iota
	spadHost
	spadHosts
	spadSlots
	spadSlotSize
	helloWords

	helloMagic = 0x4e54_4252 // "NTBR"
)

func (p *seed) hello(l *link) error {
	words := [helloWords]uint32{helloMagic, uint32(p.d.rank), uint32(p.d.npes), uint32(p.s.workers), uint32(p.s.slotSize)}
	if l.port.SpadCount() < helloWords {
		return fmt.Errorf("%s port has %d scratchpads, the hello needs %d: %w", l.side, l.port.SpadCount(), helloWords, core.ErrNotSupported)
	}
	if err := writePeerSpads(l.port, 0, words[:]); err != nil {
		return l.linkError("write hello", err)
	}
	return nil
}

// checkHello reads what the neighbour wrote and checks it is the host the
// ring says, configured alike; then clears the scratchpads for transfers.
func (p *seed) checkHello(l *link) error {
	var w [helloWords]uint32
	if err := readSpads(l.port, 0, w[:]); err != nil {
		return l.linkError("read hello", err)
	}
	want := [helloWords]uint32{helloMagic, uint32(l.peer), uint32(p.d.npes), uint32(p.s.workers), uint32(p.s.slotSize)}
	if w != want {
		return fmt.Errorf("%s port: the neighbour says magic %#x, host %d of %d, %d workers, slots of %d bytes; want host %d of %d, %d workers, slots of %d bytes (are the ports cabled in ring order, and %s and %s the same on every host?): %w",
			l.side, w[spadMagic], w[spadHost], w[spadHosts], w[spadSlots], w[spadSlotSize],
			want[spadHost], want[spadHosts], want[spadSlots], want[spadSlotSize], paramWorkers.Env, paramSlot.Env, core.ErrInvalid)
	}
	for i := range l.port.SpadCount() {
		if err := l.port.SpadWrite(i, 0); err != nil {
			return l.linkError("clear scratchpads", err)
		}
	}
	return nil
}

// start runs the goroutines and opens the doorbells.
func (p *seed) start() {
	for n := range p.s.workers {
		w := &worker{n: n, kick: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		p.wg.Add(2)
		go p.work(w)
		go p.forward()
	}
	for _, l := range p.links {
		p.dwg.Add(1)
		go p.dispatch(l)
		mask := uint64(1)<<p.s.workers - 1 | dbAlarmMask | 1<<dbBarrierStart | 1<<dbBarrierEnd
		// A failure here is a link going down, which the dispatcher sees.
		_ = l.port.DBClearMask(mask)
	}
}

// dispatch turns a port's events into work: doorbell bits wake their
// workers or count barrier signals, a link that goes down fails the domain.
func (p *seed) dispatch(l *link) {
	defer p.dwg.Done()
	for ev := range l.port.Events() {
		switch ev.Kind {
		case ntb.LinkEvent:
			if !l.port.LinkIsUp() {
				p.d.fail(&core.PeerLostError{PE: l.peer, Reason: fmt.Sprintf("the %s link went down", l.side)})
			}
		case ntb.DoorbellEvent:
			// Clear before the work is looked at: a doorbell rung after
			// this raises a new event, so no transfer is missed.
			if err := l.port.DBClear(ev.DB); err != nil {
				p.d.fail(l.linkError("clear doorbells", err))
				continue
			}
			for _, w := range p.workers {
				if ev.DB&(1<<w.n) != 0 {
					w.sides.Or(1 << l.side)
					select {
					case w.kick <- struct{}{}:
					default:
					}
				}
			}
			if l.side == ntb.Left {
				p.bar.signal(ev.DB&(1<<dbBarrierStart) != 0, ev.DB&(1<<dbBarrierEnd) != 0)
			}
			p.d.alarmed(l.side, l.peer, ev.DB)
		}
	}
}

// work is worker w's loop: on each kick it looks at its metadata group on
// each port that rang.
func (p *seed) work(w *worker) {
	defer p.wg.Done()
	for {
		select {
		case <-p.stop:
			return
		case <-w.kick:
		}
		sides := w.sides.Swap(0)
		for side, l := range p.links {
			if sides&(1<<side) == 0 {
				continue
			}
			r, ok, err := l.receive(w.n%l.groups, p.lim)
			switch {
			case err != nil && errors.Is(err, errBadMeta):
				p.d.dropped(err)
			case err != nil:
				p.d.fail(err)
			case ok:
				p.handle(l, r)
			}
		}
	}
}

// handle acts on one transfer and frees its metadata group.
func (p *seed) handle(l *link, r received) {
	m := r.m
	if int(m.dst) != p.d.rank {
		// Not ours: DMA it on in the same direction straight from the
		// window if the next link is free at once; otherwise copy it into
		// a bypass buffer, free the slot and let a forwarder take it on.
		out := opposite(l.side)
		sent, err := p.links[out].trySend(m, r.payload)
		if err != nil {
			p.d.fail(err)
		}
		if sent || err != nil {
			l.release(r.group)
			return
		}
		buf := p.d.bufs.get(len(r.payload))
		copy(*buf, r.payload)
		l.release(r.group)
		p.queue(out, m, *buf, buf)
		return
	}
	if m.kind.isResponse() {
		p.d.answered(m, r.payload)
		l.release(r.group)
		return
	}
	reply, out, buf, err := p.d.serve(m, r.payload)
	l.release(r.group)
	if err != nil {
		p.d.dropped(err)
		return
	}
	p.answer(reply, out, buf)
}

// send implements protocol: the caller's own transfer leaves by the
// shorter way round.
func (p *seed) send(m meta, payload []byte) error {
	return p.links[p.d.sideTo(int(m.dst))].send(m, payload, p.s.timeout, p.d.abort)
}

func (p *seed) maxPayload() int { return p.s.slotSize }

// broken implements protocol: it rings the alarm bits on both ports. Each
// host that hears it fails and rings it on in turn, once, so it spreads
// both ways from the break to every host. A port whose link is down
// cannot ring, and needs not: its neighbour saw the link go down.
func (p *seed) broken(lost int) {
	p.ports.alarm(lost)
	p.failed()
}

// failed implements protocol: a barrier waiting here consults the
// failure now.
func (p *seed) failed() { p.bar.ev.Notify() }

// close implements protocol.
func (p *seed) close() error {
	close(p.stop)
	// The workers and forwarders stop before the ports close: a worker
	// still releasing a slot would write a scratchpad of a port whose
	// registers are unmapped. Closing the ports then ends their event
	// channels, and so the dispatchers.
	p.wg.Wait()
	err := p.ports.close()
	p.dwg.Wait()
	for _, it := range p.fwd.items {
		p.d.bufs.put(it.buf)
	}
	p.fwd.items = nil
	return err
}
