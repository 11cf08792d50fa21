package ntbring

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// ringProto is the default protocol: descriptor rings in the windows,
// puts landing straight in the neighbour's regions, relays that never
// hold a ring entry while they wait.
//
// Goroutines, all stopped by close: per port one dispatcher (link and
// doorbell events) and one receiver (the ring from the neighbour);
// workers that serve requests and relay; one forwarder per side that
// sends what a worker or receiver could not send at once. Receivers and
// workers never wait for a ring entry: a transfer that finds no room is
// copied out of its entry, the entry released, and the copy queued for
// the forwarder. So a full ring never waits on itself round the ring.
type ringProto struct {
	d     *domain
	s     settings
	ports *ringPorts
	sides []ntb.Side                       // the host's ports: d.topo.sides()
	links [ntb.Sides]atomic.Pointer[rlink] // by ntb.Side: a repaired link replaces its rlink
	poll  time.Duration                    // how long an idle receiver polls: see idlePoll
	cut   atomic.Int32                     // ring: the index of the link known to be down, or noCut
	// torus: the links known to be down (under routeMu) and the routing
	// table over the others (routes), by destination host.
	routeMu sync.Mutex
	cuts    linkSet
	table   atomic.Pointer[[]hop]
	// lenders numbers the puts that lend their source to the rings.
	lenders atomic.Uint64
	// dmaWaits pools the completions of direct puts (dmaWait).
	dmaWaits sync.Pool

	jobs chan rxJob
	fwd  [ntb.Sides]fwdQueue // by side

	bar ringBarrier   // the seeds' ring barrier on doorbells
	dis dissemination // the dissemination barrier over the rings

	// exported are the regions' memories by region index, to point the
	// region windows at again when a link is repaired.
	exportMu sync.Mutex
	exported map[int]ntb.Memory

	// repairing is set while side's link is being repaired; repairMu
	// orders starting a repair against close.
	repairing [ntb.Sides]atomic.Bool
	repairMu  sync.Mutex
	// awaiting counts the second cuts waiting for the first cut's repair
	// notice (awaitRepair); a wait that has ended can fail nothing.
	awaiting atomic.Int32

	stop chan struct{}
	wg   sync.WaitGroup // everything but the dispatchers: stopped by stop
	dwg  sync.WaitGroup // the dispatchers: stopped by closing the ports
}

// rxJob is an entry a receiver hands to a worker: a request for this
// host, or a transfer to relay.
type rxJob struct {
	l       *rlink
	i       uint32
	m       meta
	payload []byte
}

func newRingProto(d *domain, r *ringPorts, s settings) (*ringProto, error) {
	p := &ringProto{d: d, s: s, ports: r, sides: d.topo.sides(), stop: make(chan struct{}),
		jobs: make(chan rxJob, len(d.topo.sides())*ringEntries), exported: map[int]ntb.Memory{}}
	p.dmaWaits.New = newDMAWait
	p.cut.Store(noCut)
	if d.topo.torus() {
		table := routes(d.topo, linkSet{}, d.rank)
		p.table.Store(&table)
	}
	virtual := false
	for _, sd := range p.sides {
		l, err := newRlink(sd, r.port(sd), d.topo.neighbour(d.rank, sd), s.slotSize)
		if err != nil {
			return nil, err
		}
		virtual = virtual || l.virtual
		p.links[sd].Store(l)
		p.fwd[sd].wake = make(chan struct{}, 1)
	}
	// On a device in virtual time a receiver's poll for a while would be
	// a poll without end: it sleeps after its idleYields looks.
	if d.size <= s.cpus && !virtual {
		p.poll = idlePoll
	}
	return p, nil
}

// link is the current rlink of side s.
func (p *ringProto) link(s ntb.Side) *rlink { return p.links[s].Load() }

// all is the current rlinks of every side.
func (p *ringProto) all() []*rlink {
	out := make([]*rlink, len(p.sides))
	for i, s := range p.sides {
		out[i] = p.link(s)
	}
	return out
}

// The scratchpad words of the ring protocol's hello, written by each host
// into its neighbours' scratchpads at link-up, magic last. The epoch is
// random per link-up (rlink.epoch): descriptors carry it, so entries a neighbour's earlier
// incarnation left are never taken for its own.
const (
	rspMagic = iota
	rspEpoch
	rspHost
	rspHosts
	rspSlotSize
	rspEntries
	ringHelloWords

	ringHelloMagic = 0x4e54_5251 // "NTRQ"
)

// setup sets the ring windows, brings the links up, exchanges the hello,
// maps the neighbours' ring windows and starts the goroutines. Every step
// ends in core.Agree (setupLinks), so all hosts fail together.
func (p *ringProto) setup() error {
	if err := setupLinks(p.d, p.ports, p.s, p.all(), p.hello, p.checkHello); err != nil {
		return err
	}
	p.start()
	return nil
}

func (p *ringProto) helloWords(l *rlink) [ringHelloWords]uint32 {
	return [ringHelloWords]uint32{ringHelloMagic, l.epoch, uint32(p.d.rank), uint32(p.d.npes), uint32(p.s.slotSize), ringEntries}
}

func (p *ringProto) hello(l *rlink) error {
	w := p.helloWords(l)
	if err := writePeerSpads(l.port, 0, w[:]); err != nil {
		return l.linkError("write hello", err)
	}
	return nil
}

// checkHello reads the neighbour's hello, checks it is the host the ring
// says, configured alike, keeps its epoch, and clears the scratchpads: a
// hello must never outlive the neighbour that wrote it.
func (p *ringProto) checkHello(l *rlink) error {
	var w [ringHelloWords]uint32
	if err := readSpads(l.port, 0, w[:]); err != nil {
		return l.linkError("read hello", err)
	}
	want := p.helloWords(l)
	want[rspEpoch], want[rspHost] = w[rspEpoch], uint32(l.peer)
	if w != want || w[rspEpoch]&1 == 0 {
		return fmt.Errorf("%s port: the neighbour says magic %#x, epoch %#x, host %d of %d, slots of %d bytes, %d entries; want magic %#x, an odd epoch, host %d of %d, slots of %d bytes, %d entries (are the ports cabled in ring order, and %s and %s the same on every host?): %w",
			l.side, w[rspMagic], w[rspEpoch], w[rspHost], w[rspHosts], w[rspSlotSize], w[rspEntries],
			uint32(ringHelloMagic), want[rspHost], want[rspHosts], want[rspSlotSize], want[rspEntries],
			paramProtocol.Env, paramSlot.Env, core.ErrInvalid)
	}
	l.peerEpoch = w[rspEpoch]
	for i := range ringHelloWords {
		if err := l.port.SpadWrite(i, 0); err != nil {
			return l.linkError("clear scratchpads", err)
		}
	}
	return nil
}

// start runs the goroutines and opens the doorbells.
func (p *ringProto) start() {
	for range p.s.workers {
		p.wg.Add(1)
		go p.work()
	}
	for _, l := range p.all() {
		p.dwg.Add(1)
		p.wg.Add(2)
		go p.dispatch(l.side)
		go p.receive(l)
		go p.forward(l.side)
		// A failure here is a link going down, which the dispatcher sees.
		_ = l.port.DBClearMask(dbRingNeeded)
	}
}

// dispatch turns a port's events into work: the ring doorbell wakes the
// receiver, barrier bits count, a link that goes down is routed round and
// one that comes back up is repaired (repair.go). side's rlink changes
// when it is repaired; its port does not.
func (p *ringProto) dispatch(side ntb.Side) {
	defer p.dwg.Done()
	port := p.link(side).port
	for ev := range port.Events() {
		l := p.link(side)
		switch ev.Kind {
		case ntb.LinkEvent:
			switch up := l.port.LinkIsUp(); {
			case p.d.closing.Load():
			case !up:
				p.linkDown(l)
			case l.down.Load() && p.d.topo.torus():
				// A torus routes round a cut link for the rest of the
				// job: a repair is the ring's (repair.go).
			case l.down.Load():
				p.startRepair(l)
			}
		case ntb.DoorbellEvent:
			// Clear before looking: a doorbell rung after this raises a
			// new event, so no wake-up is lost.
			if err := l.port.DBClear(ev.DB); err != nil {
				p.d.fail(l.linkError("clear doorbells", err))
				continue
			}
			if ev.DB&(1<<dbRing) != 0 {
				select {
				case l.rx.kick <- struct{}{}:
				default:
				}
			}
			if l.side == ntb.Left {
				p.bar.signal(ev.DB&(1<<dbBarrierStart) != 0, ev.DB&(1<<dbBarrierEnd) != 0)
			}
			p.d.alarmed(l.side, l.peer, ev.DB)
		}
	}
}

// receive is the receiver of the ring from l's neighbour: it takes every
// published entry in order, handles what is quick itself and hands the
// rest to the workers. Once the link is cut it takes no more, tells the
// neighbour how far it read, and stops.
func (p *ringProto) receive(l *rlink) {
	defer p.wg.Done()
	r := &l.rx
	for {
		if l.down.Load() {
			p.sendNotice(l, r.next)
			l.rxDone.Store(true)
			return
		}
		prod := atomic.LoadUint32(r.prod)
		if prod == r.next {
			if !r.wait(p.stop, p.poll, &l.down) {
				return
			}
			continue
		}
		if prod-r.consumed() > ringEntries {
			p.d.fail(fmt.Errorf("%s link: the neighbour published entry %d while %d was due, past the ring's %d entries: %w",
				l.side, prod, r.next, ringEntries, errBadMeta))
			return
		}
		for ; r.next != prod && !l.down.Load(); r.next++ {
			if !p.entry(l, r.next) {
				break
			}
		}
		// Taken entries are this host's to finish: their senders need
		// no copy to resend them round a cut (txRing.lend).
		atomic.StoreUint32(r.taken, r.next)
	}
}

// entry validates entry i and acts on it. It reports false, taking
// nothing, for an entry that may have been torn by the link going down:
// the neighbour resends it round the cut.
func (p *ringProto) entry(l *rlink, i uint32) bool {
	w := loadDesc(descAt(l.rx.descs, int(i%ringEntries)))
	m, err := decodeDesc(w, descLimits{index: i, epoch: l.peerEpoch, self: p.d.rank, hosts: p.d.npes, lanes: p.d.lanes, slotSize: p.s.slotSize, width: p.d.topo.width})
	if err != nil {
		if l.down.Load() || !l.port.LinkIsUp() {
			return false
		}
		l.rx.release(i)
		p.d.dropped(fmt.Errorf("%s link, ring entry %d: %w", l.side, i, err))
		return true
	}
	payload := l.slot(l.rx.data, i)[:m.payloadLen()]
	if m.kind != kindLanded {
		l.rx.worked = time.Now()
	}
	switch {
	case int(m.dst) != p.d.rank || !(m.kind.isResponse() || m.kind == kindLanded || m.kind == kindBarrier || m.kind.isLinkNotice() || m.kind == kindLinkDown):
		// Never blocks: every job holds an entry, and the channel has
		// room for every entry of both rings.
		select {
		case p.jobs <- rxJob{l: l, i: i, m: m, payload: payload}:
		case <-p.stop:
		}
	case m.kind == kindLanded:
		l.rx.release(i)
		// Record the notice as acted on before waking: see noticePending.
		atomic.StoreUint32(l.rx.landed, i+1)
		p.landed(m)
	case m.kind == kindBarrier:
		l.rx.release(i)
		p.dis.signal(int(m.round))
	case m.kind == kindCut:
		l.rx.release(i)
		p.peerCut(m)
	case m.kind == kindLinkDown:
		l.rx.release(i)
		p.learnCut(p.d.topo.linkOf(int(m.linkHost), m.side))
	case m.kind == kindRepair:
		// Its sender's end of the link is in use again, and so is ours:
		// this host learned the repair before it sent its own notice.
		l.rx.release(i)
	default:
		p.d.answered(m, payload)
		l.rx.release(i)
	}
	return true
}

// landed acts on a landed notice: bytes another host put arrived in a
// region of ours. Waiters wake; a relayed put's source gets its ack.
func (p *ringProto) landed(m meta) {
	if p.d.regionFor(m.dpe, m.region, int(m.off), int(m.size)) == nil {
		p.d.dropped(fmt.Errorf("%w: landed notice for region %d bytes [%d, %d), which this host does not have",
			errBadMeta, m.region, m.off, uint64(m.off)+uint64(m.size)))
		return
	}
	p.d.wake()
	if m.tag != 0 {
		p.sendOn(meta{kind: kindPutAck, src: m.dst, dst: m.src, tag: m.tag}, nil, nil)
	}
}

// work is a worker's loop: it serves requests and relays transfers.
func (p *ringProto) work() {
	defer p.wg.Done()
	for {
		select {
		case <-p.stop:
			return
		case j := <-p.jobs:
			if int(j.m.dst) == p.d.rank {
				p.serveJob(j)
			} else {
				p.relay(j)
			}
		}
	}
}

// serveJob executes a request and sends the answer back.
func (p *ringProto) serveJob(j rxJob) {
	reply, out, buf, err := p.d.serve(j.m, j.payload)
	j.l.rx.release(j.i)
	if err != nil {
		p.d.dropped(err)
		return
	}
	p.sendOn(reply, out, buf)
}

// relay passes a transfer for another host on, in the direction it came,
// or back the way it came if the next link is cut. A put whose next hop
// is its destination lands straight in that host's region where it has a
// window onto it, and a landed notice follows.
func (p *ringProto) relay(j rxJob) {
	switch k := p.d.topo.linkOf(int(j.m.src), j.m.side); j.m.kind {
	case kindCut:
		p.learnCut(k)
	case kindRepair:
		p.learnRepair(k)
	}
	out := p.link(opposite(j.l.side))
	if p.d.topo.torus() {
		out = p.link(p.sideFor(int(j.m.dst)))
	}
	if out.down.Load() {
		p.turn(j, out)
		return
	}
	// The destination's lane node has a window onto each PE of its host.
	if j.m.kind == kindPut && out.peer == int(j.m.dst) {
		if win := p.regionWindow(out, j.m.region, int(j.m.dpe)); win != nil && uint64(j.m.off)+uint64(j.m.size) <= uint64(len(win)) {
			landed := func(err error) {
				if isCut(err) || err == nil && !out.port.LinkIsUp() {
					p.turn(j, out)
					return
				}
				j.l.rx.release(j.i)
				if err != nil {
					p.d.fail(out.linkError("DMA", err))
					return
				}
				// The bytes are in the destination's memory: the source
				// hears so from here, one hop back, and the destination
				// gets a landed notice for its waiters.
				if j.m.tag != 0 {
					p.sendOn(meta{kind: kindPutAck, src: j.m.dst, dst: j.m.src, tag: j.m.tag}, nil, nil)
				}
				m := j.m
				m.kind, m.tag = kindLanded, 0
				p.notifyLanded(out, m)
			}
			dst := win[j.m.off : j.m.off+j.m.size]
			if len(j.payload) <= pioMax {
				copy(dst, j.payload)
				landed(nil)
			} else if err := out.dmaAsync(dst, j.payload, streamOf(j.m), landed); err != nil {
				landed(err)
			}
			return
		}
	}
	if i, ok := out.tx.reserve(false); ok {
		if len(j.payload) > pioMax {
			// The worker moves on; the DMA's completion frees the entry,
			// so the next piece's DMA queues behind this one's.
			err := out.putAsync(i, j.m, j.payload, streamOf(j.m), func(err error) {
				j.l.rx.release(j.i)
				if err != nil {
					p.d.fail(err)
				}
			})
			if err != nil {
				j.l.rx.release(j.i)
				p.d.fail(err)
			}
			return
		}
		err := out.put(i, j.m, j.payload)
		j.l.rx.release(j.i)
		if err != nil {
			p.d.fail(err)
		}
		return
	}
	p.requeue(j, out.side)
}

// turn sends a relayed transfer whose next link, out, is cut back the
// way it came, round the ring to its destination. A cut notice cannot
// turn: the ring is cut twice. Nor does a repair notice: the other end of
// the repaired link sends one the other way. On a torus every transfer
// goes on round the cut, by the routes that leave it out.
func (p *ringProto) turn(j rxJob, out *rlink) {
	if p.d.topo.torus() {
		p.learnCut(p.d.topo.linkOf(p.d.rank, out.side))
		p.requeue(j, p.sideFor(int(j.m.dst)))
		return
	}
	switch j.m.kind {
	case kindCut:
		j.l.rx.release(j.i)
		p.learnCut(linkIndex(p.d.rank, p.d.npes, opposite(j.l.side)))
		return
	case kindRepair:
		j.l.rx.release(j.i)
		return
	}
	p.requeue(j, j.l.side)
}

// requeue copies a relayed transfer out of its entry, releases the entry
// and queues the copy for the forwarder of side.
func (p *ringProto) requeue(j rxJob, side ntb.Side) {
	buf := p.d.bufs.get(len(j.payload))
	copy(*buf, j.payload)
	j.l.rx.release(j.i)
	p.queue(side, j.m, *buf, buf)
}

// sendOn sends an answer or relay without waiting: at once if its link
// has room, else through the forwarder. buf, if not nil, holds payload
// and goes back to the pool once sent.
func (p *ringProto) sendOn(m meta, payload []byte, buf *[]byte) {
	side := p.sideFor(int(m.dst))
	if i, ok := p.link(side).tx.reserve(false); ok {
		if err := p.link(side).put(i, m, payload); err != nil {
			p.d.fail(err)
		}
		p.d.bufs.put(buf)
		return
	}
	if buf == nil && len(payload) > 0 {
		// The payload may change once we return (a get's answer is read
		// from the region as it is when the data leaves): keep a copy.
		buf = p.d.bufs.get(len(payload))
		copy(*buf, payload)
		payload = *buf
	}
	p.queue(side, m, payload, buf)
}

// notifyLanded sends the landed notice m over l, whose neighbour the
// notice's bytes just landed in, without waiting, unless a notice sent
// over l before is still to be acted on: that notice's wake-up comes
// after these bytes and covers them (txRing.noticePending).
func (p *ringProto) notifyLanded(l *rlink, m meta) {
	if l.tx.noticePending() {
		return
	}
	i, ok := l.tx.reserve(false)
	if !ok {
		p.queue(l.side, m, nil, nil)
		return
	}
	atomic.StoreUint32(l.tx.notice, i+1)
	if err := l.put(i, m, nil); err != nil {
		p.d.fail(err)
	}
}

// queue hands a transfer to the forwarder of side.
func (p *ringProto) queue(side ntb.Side, m meta, payload []byte, buf *[]byte) {
	q := &p.fwd[side]
	q.mu.Lock()
	q.items = append(q.items, fwdItem{side: side, m: m, payload: payload, buf: buf})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// forward is the forwarder of side: it waits for room in the ring and
// sends what was queued, in order.
func (p *ringProto) forward(side ntb.Side) {
	defer p.wg.Done()
	q := &p.fwd[side]
	for {
		q.mu.Lock()
		var it fwdItem
		ok := len(q.items) > 0
		if ok {
			it = q.items[0]
			q.items[0] = fwdItem{}
			q.items = q.items[1:]
		}
		q.mu.Unlock()
		if !ok {
			select {
			case <-p.stop:
				return
			case <-q.wake:
			}
			continue
		}
		if err := p.sendVia(side, false, it.m, it.payload); err != nil {
			p.d.fail(err)
		}
		p.d.bufs.put(it.buf)
	}
}

// putPieces implements piecePutter: a put through the ring, cut into
// pieces of SLOT_SIZE that all carry m's tag (sendPieces). It returns once
// src may be reused; the destination acks every piece.
func (p *ringProto) putPieces(m meta, src []byte) error {
	var (
		wg    sync.WaitGroup
		first atomic.Pointer[error]
		lp    lentPut
	)
	fail := func(err error) {
		if err != nil {
			first.CompareAndSwap(nil, &err)
		}
	}
	lp.init(p)
	fail(p.sendPieces(m, src, &lp, wg.Add, func(err error) { fail(err); wg.Done() }, func() bool { return first.Load() != nil }))
	wg.Wait()
	lp.settle()
	if err := first.Load(); err != nil {
		return *err
	}
	return nil
}

// putPiecesAsync implements asyncPiecePutter: putPieces without waiting
// for the pieces' DMAs. src must stay unchanged until settle is called,
// once the put completed or failed; fail gets the pieces' errors.
func (p *ringProto) putPiecesAsync(m meta, src []byte, fail func(error)) (settle func(), err error) {
	lp := &lentPut{}
	lp.init(p)
	err = p.sendPieces(m, src, lp, func(int) {}, func(err error) {
		if err != nil {
			fail(err)
		}
	}, func() bool { return false })
	return lp.settle, err
}

// sendPieces sends src as pieces of SLOT_SIZE that carry m's tag, the way
// to m.dst. Pieces that go by DMA are queued back to back, so the link
// does not idle between two of them, and src is lent to the ring for them
// rather than copied for a resend (txRing.lend): add(1) counts each before
// its DMA is queued, done reports it when the DMA completes. It stops at
// the first error it meets, which it returns, or once stop says so.
func (p *ringProto) sendPieces(m meta, src []byte, lp *lentPut, add func(int), done func(error), stop func() bool) error {
	side := p.sideFor(int(m.dst))
	for off := 0; off < len(src) && !stop(); off += p.s.slotSize {
		piece := src[off:min(off+p.s.slotSize, len(src))]
		pm := m
		pm.off += uint32(off)
		l, i, err := p.credit(side, int(m.dst), true)
		if err != nil {
			return err
		}
		if len(piece) <= pioMax {
			if err := l.put(i, pm, piece); err != nil {
				return err
			}
			continue
		}
		lp.add(l, i)
		add(1)
		if err := l.putLent(i, pm, piece, lp.lender, done); err != nil {
			done(nil)
			return err
		}
	}
	return nil
}

// pieces implements piecePutter.
func (p *ringProto) pieces(n int) int { return (n + p.s.slotSize - 1) / p.s.slotSize }

// send implements protocol: this host's own transfer leaves by the
// shorter way round.
func (p *ringProto) send(m meta, payload []byte) error {
	return p.sendVia(p.sideFor(int(m.dst)), true, m, payload)
}

func (p *ringProto) maxPayload() int { return p.s.slotSize }

// broken implements protocol: it rings the alarm on both ports.
func (p *ringProto) broken(lost int) {
	for _, l := range p.all() {
		l.setUp(false)
	}
	p.ports.alarm(lost)
	p.failed()
}

// failed implements protocol: it wakes the barrier's and the
// dissemination's waiters.
func (p *ringProto) failed() {
	p.bar.ev.Notify()
	p.dis.ev.Notify()
}

// abort ends a wait for room in a ring: the domain failed or the
// protocol stops.
func (p *ringProto) abort() error {
	select {
	case <-p.stop:
		return core.ErrClosed
	default:
		return p.d.abort()
	}
}

// close implements protocol. The goroutines that touch the windows stop
// before the ports close and unmap them.
func (p *ringProto) close() error {
	for _, l := range p.all() {
		l.setUp(false)
		l.cutMu.Lock()
		if l.noticeTimer != nil {
			l.noticeTimer.Stop()
		}
		l.cutMu.Unlock()
	}
	p.repairMu.Lock()
	close(p.stop)
	p.repairMu.Unlock()
	p.wg.Wait()
	err := p.ports.close()
	p.dwg.Wait()
	for s := range p.fwd {
		for _, it := range p.fwd[s].items {
			p.d.bufs.put(it.buf)
		}
		p.fwd[s].items = nil
	}
	return err
}
