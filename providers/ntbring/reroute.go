package ntbring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// Rerouting round a cut link (ring protocol only).
//
// When the link between hosts A and B goes down, each of them marks its
// port cut: nothing more is reserved in the ring into the other, and its
// receiver of the other's ring stops at a definite entry X, the first it
// did not take. Each sends the other a cut notice (kindCut) the long way
// round, saying X; every host it passes learns where the ring is cut and
// routes round it from then on. A host that gets the notice resends, the
// other way round, every entry of its ring into the other from X on: it
// keeps a copy of each entry until the entry is reused (txRing.keep), so
// it needs nothing from across the dead link. Entries before X were taken
// by the other host and are its to finish; entries from X on were never
// acted on. So every transfer is acted on once: a put lands once, a
// fetch-add runs once, each answer arrives once. Transfers that meet the
// cut on their way (a relay whose next link is down, a queued answer) turn
// round and go the other way.
//
// A second cut splits the ring in two: the host that learns of it fails
// with a peer-lost error naming a host across the cuts, and the alarm
// spreads it. (A cut that comes while the ring is known cut elsewhere
// waits up to repairGrace for that link's repair notice first: see
// learnCut.) So does a neighbour that died, a cut notice that does not
// come within the timeout, and any cut under the doorbell barrier, which
// cannot go round a break.

// errCut is waitCredit's answer on a link that was cut: the caller sends
// the other way round.
var errCut = errors.New("the link is cut")

// noCut is ringProto.cut while the ring is whole.
const noCut = -1

// linkIndex is the index of the link on side s of host me: link k joins
// host k's Right port to host k+1's Left port.
func linkIndex(me, n int, s ntb.Side) int {
	if s == ntb.Right {
		return me
	}
	return (me + n - 1) % n
}

// sideFor is the side a transfer to dst leaves by: the shorter way round
// while the ring is whole, else the way that does not cross the cut; on
// a torus, the routing table's (routes) over the links not known cut.
func (p *ringProto) sideFor(dst int) ntb.Side {
	if t := p.table.Load(); t != nil {
		return (*t)[dst].side
	}
	k := int(p.cut.Load())
	me, n := p.d.rank, p.d.npes
	if k == noCut {
		s, _ := route(me, dst, n)
		return s
	}
	// Going right from me crosses links me, me+1, ..., dst-1.
	if (k-me+n)%n < (dst-me+n)%n {
		return ntb.Left
	}
	return ntb.Right
}

// learnCut records that link k is down. A second cut fails the domain:
// the ring is in two pieces. But the link known to be cut, j, may have
// been repaired already, its repair notice still on its way here while
// k's cut notice came first: so k counts as a second cut only if j is
// still cut after repairGrace (awaitRepair).
func (p *ringProto) learnCut(k int) {
	if p.d.topo.torus() {
		p.learnTorusCut(k)
		return
	}
	if p.cut.CompareAndSwap(noCut, int32(k)) {
		p.d.log.Info("ntbring: the ring is cut, routing round it", "host", p.d.rank, "link", k)
		return
	}
	if j := int(p.cut.Load()); j != k {
		p.awaitRepair(j, k)
	}
}

// learnTorusCut records that link k of a torus is down, once: the
// routing table leaves it out from now on, and this host tells each of its
// neighbours, which tell theirs, so that every host learns of the cut
// (kindLinkDown) and none routes into it. The cut notices go from each
// end of the link to the other round it, as on a ring. A cut that leaves
// a host with no path to it fails the domain, naming that host.
func (p *ringProto) learnTorusCut(k int) {
	p.routeMu.Lock()
	if p.cuts.has(k) {
		p.routeMu.Unlock()
		return
	}
	p.cuts.add(k)
	table := routes(p.d.topo, p.cuts, p.d.rank)
	p.table.Store(&table)
	cuts := p.cuts
	p.routeMu.Unlock()
	p.d.log.Info("ntbring: a link of the torus is cut, routing round it", "host", p.d.rank, "link", k, "cut", cuts.String())
	for dst, h := range table {
		if h.hops == 0 && dst != p.d.rank {
			p.d.fail(&core.PeerLostError{PE: dst, Reason: fmt.Sprintf("the torus is cut at links %v, and no path is left to host %d", cuts, dst)})
			return
		}
	}
	host, side := p.d.topo.linkEnd(k)
	for _, s := range p.sides {
		nb := p.d.topo.neighbour(p.d.rank, s)
		if p.d.topo.linkOf(p.d.rank, s) == k {
			continue // it knows: the link is its own
		}
		m := meta{kind: kindLinkDown, src: uint8(p.d.rank), dst: uint8(nb), side: side, linkHost: uint8(host)}
		// Queued, never sent here: the caller may hold a link's locks.
		p.queue(p.sideFor(nb), m, nil, nil)
	}
}

// awaitRepair waits in the background, up to repairGrace, for link j,
// known to be cut, to be known repaired, and then learns the cut of link
// k; it fails the domain if j is still cut by then.
func (p *ringProto) awaitRepair(j, k int) {
	p.repairMu.Lock()
	defer p.repairMu.Unlock()
	select {
	case <-p.stop:
		return
	default:
	}
	p.wg.Add(1)
	p.awaiting.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.awaiting.Add(-1)
		deadline := time.Now().Add(min(repairGrace, p.s.timeout))
		pause := core.Backoff{Max: time.Millisecond}
		for p.cut.Load() == int32(j) {
			if p.abort() != nil {
				return
			}
			if time.Now().After(deadline) {
				p.d.fail(&core.PeerLostError{PE: acrossCuts(p.d.rank, p.d.npes, j, k),
					Reason: fmt.Sprintf("the ring is cut at links %d and %d", min(j, k), max(j, k))})
				return
			}
			pause.Pause()
		}
		p.learnCut(k)
	}()
}

// repairGrace is how long a repair notice may trail a cut notice that
// overtook it: both go round the ring, one descriptor relayed by each
// host on the way. It delays by as much the failure a real second cut
// causes (a dead host cuts both its links).
const repairGrace = 250 * time.Millisecond

// acrossCuts is a host on the other piece of a ring of n cut at links a
// and b, seen from me.
func acrossCuts(me, n, a, b int) int {
	a, b = min(a, b), max(a, b)
	if me > a && me <= b {
		return (b + 1) % n
	}
	return (a + 1) % n
}

// linkDown acts on l's link going down outside Close.
func (p *ringProto) linkDown(l *rlink) {
	if w, ok := l.port.(ntb.PeerWatcher); ok && w.PeerDead() || p.s.barrier == barrierRing {
		p.d.fail(&core.PeerLostError{PE: l.peer, Reason: fmt.Sprintf("the %s link went down", l.side)})
		return
	}
	p.cutLink(l)
}

// cutLink marks l cut, once: its ring takes no more entries, its receiver
// stops and sends the cut notice, and the neighbour's notice must come
// within the timeout.
func (p *ringProto) cutLink(l *rlink) {
	l.cutMu.Lock()
	defer l.cutMu.Unlock()
	if l.down.Load() {
		return
	}
	l.setUp(false) // C code's direct puts look at this after their stores
	l.tx.mu.Lock()
	l.tx.down = true
	l.down.Store(true)
	l.tx.mu.Unlock()
	p.learnCut(p.d.topo.linkOf(p.d.rank, l.side))
	select {
	case l.rx.kick <- struct{}{}:
	default:
	}
	select {
	case p.fwd[l.side].wake <- struct{}{}:
	default:
	}
	l.noticeTimer = time.AfterFunc(p.s.timeout, func() {
		if !l.resent.Load() {
			p.d.fail(&core.PeerLostError{PE: l.peer,
				Reason: fmt.Sprintf("the %s link went down and no cut notice came round the ring within %v", l.side, p.s.timeout)})
		}
	})
}

// sendNotice is what l's receiver does when l is cut: it tells the
// neighbour, the long way round (on a torus, the shortest way round the
// cut), that it took the neighbour's entries up to next.
func (p *ringProto) sendNotice(l *rlink, next uint32) {
	m := meta{kind: kindCut, src: uint8(p.d.rank), dst: uint8(l.peer), side: l.side, taken: next}
	side := opposite(l.side)
	if p.d.topo.torus() {
		side = p.sideFor(l.peer)
	}
	if err := p.sendVia(side, false, m, nil); err != nil {
		p.d.fail(err)
	}
}

// peerCut acts on the neighbour's cut notice m: its link to us is cut,
// and it took our entries up to m.taken; the rest go the other way round.
func (p *ringProto) peerCut(m meta) {
	l := p.link(opposite(m.side))
	if l.peer != int(m.src) {
		p.d.dropped(fmt.Errorf("%w: cut notice from host %d, which is not across a link of ours", errBadMeta, m.src))
		return
	}
	p.cutLink(l)
	if l.resent.Swap(true) {
		p.d.dropped(fmt.Errorf("%w: a second cut notice from host %d", errBadMeta, m.src))
		return
	}
	l.cutMu.Lock()
	if l.noticeTimer != nil {
		l.noticeTimer.Stop()
	}
	l.cutMu.Unlock()
	kept, err := l.tx.unsent(m.taken, p.s.timeout)
	if err != nil {
		p.d.fail(fmt.Errorf("%s link: %w", l.side, err))
		return
	}
	for _, k := range kept {
		side := opposite(l.side)
		if p.d.topo.torus() {
			side = p.sideFor(int(k.m.dst))
		}
		p.queue(side, k.m, k.data, nil)
	}
	p.d.log.Info("ntbring: resent round the cut", "host", p.d.rank, "side", l.side, "from", m.taken, "entries", len(kept))
}

// credit reserves an entry in the ring of side s, or of the other side if
// s's link is cut; on a torus, of the side the routes round the cut give
// for dst.
func (p *ringProto) credit(s ntb.Side, dst int, own bool) (*rlink, uint32, error) {
	for {
		l := p.link(s)
		if l.down.Load() && p.d.topo.torus() {
			// The link may be marked down an instant before the table
			// leaves it out.
			p.learnCut(p.d.topo.linkOf(p.d.rank, s))
			h := (*p.table.Load())[dst]
			if h.hops == 0 || h.side == s {
				return nil, 0, &core.PeerLostError{PE: dst, Reason: fmt.Sprintf("host %d has no path left to host %d", p.d.rank, dst)}
			}
			s = h.side
			continue
		}
		if l.down.Load() {
			if s = opposite(s); p.link(s).down.Load() {
				return nil, 0, &core.PeerLostError{PE: l.peer, Reason: fmt.Sprintf("both links of host %d are down", p.d.rank)}
			}
			continue
		}
		i, err := l.waitCredit(own, p.s.timeout, p.abort)
		if !errors.Is(err, errCut) {
			return l, i, err
		}
	}
}

// sendVia sends m on side s once its ring has room, or the other way
// round if s's link is cut.
func (p *ringProto) sendVia(s ntb.Side, own bool, m meta, payload []byte) error {
	l, i, err := p.credit(s, int(m.dst), own)
	if err != nil {
		return err
	}
	return l.put(i, m, payload)
}

// keptEntry is a copy of a ring entry, kept until the entry is reused so
// that it can be resent round a cut. data is the payload: buf, the
// entry's own copy, or while lender is not 0 the memory it was lent from.
type keptEntry struct {
	m      meta
	data   []byte
	buf    []byte
	lender uint64
}

// keep copies entry i before it is written across the link.
func (t *txRing) keep(i uint32, m meta, payload []byte) {
	k := &t.kept[i%ringEntries]
	k.buf = append(k.buf[:0], payload...)
	k.m, k.data = m, k.buf
	t.mu.Lock()
	t.keptOK[i%ringEntries] = true
	t.mu.Unlock()
}

// lend records entry i without copying its payload, which lender keeps
// unchanged until it calls settle. A relayed byte would otherwise be
// copied three times where a direct one is copied once: into the kept
// copy, across the link and on by the relay. Most lent entries are taken
// by the neighbour before the put returns and never copied at all.
func (t *txRing) lend(i uint32, m meta, payload []byte, lender uint64) {
	t.mu.Lock()
	k := &t.kept[i%ringEntries]
	k.m, k.data, k.lender = m, payload, lender
	t.mu.Unlock()
}

// tookAll reports whether the neighbour took every entry before end.
func (t *txRing) tookAll(end uint32) bool { return int32(atomic.LoadUint32(t.taken)-end) >= 0 }

// settle ends lender's loan of entries first..end-1: an entry the
// neighbour has not taken is copied, for it may yet be resent round a
// cut; a taken one is the neighbour's to finish and is let go. Entries
// reused since (the neighbour took and freed them) are another's.
func (t *txRing) settle(lender uint64, first, end uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	taken := atomic.LoadUint32(t.taken)
	for i := first; i != end; i++ {
		k := &t.kept[i%ringEntries]
		if k.lender != lender {
			continue
		}
		k.lender = 0
		if int32(i-taken) < 0 {
			k.data = nil
			continue
		}
		t.own(i)
	}
}

// own makes entry i's kept copy its own: a copy of what it was lent.
// The caller holds t.mu.
func (t *txRing) own(i uint32) {
	k := &t.kept[i%ringEntries]
	k.buf = append(k.buf[:0], k.data...)
	k.data, k.lender = k.buf, 0
	t.keptOK[i%ringEntries] = true
}

// lentRange is the entries first..end-1 of l's ring that one put lent.
type lentRange struct {
	l          *rlink
	first, end uint32
}

// lentPut is what one put lent to the rings: as a rule entries of one
// link, of two if the link was cut while the put was being sent.
type lentPut struct {
	lender uint64
	arr    [2]lentRange
	lent   []lentRange
}

func (lp *lentPut) init(p *ringProto) {
	lp.lender, lp.lent = p.lenders.Add(1), lp.arr[:0]
}

// add records that entry i of l's ring is lent.
func (lp *lentPut) add(l *rlink, i uint32) {
	if n := len(lp.lent); n > 0 && lp.lent[n-1].l == l && lp.lent[n-1].end == i {
		lp.lent[n-1].end++
		return
	}
	lp.lent = append(lp.lent, lentRange{l: l, first: i, end: i + 1})
}

// lendWait is how long a put waits for the neighbours to take the entries
// it lent before it copies those they did not.
const lendWait = 20 * time.Microsecond

// settle ends the put's loans: it waits, up to lendWait, for the
// neighbours to take its entries, then settles them, after which the put's
// source may change.
func (lp *lentPut) settle() {
	for _, r := range lp.lent {
		r.l.yieldPoll(lendWait, func() bool { return r.l.tx.tookAll(r.end) || r.l.down.Load() })
		r.l.tx.settle(lp.lender, r.first, r.end)
	}
}

// unsent returns copies of entries from..next of a cut ring, once every
// one of them is kept; from is where the neighbour stopped taking them.
func (t *txRing) unsent(from uint32, timeout time.Duration) ([]keptEntry, error) {
	deadline := time.Now().Add(timeout)
	for n := 1; ; n++ {
		t.mu.Lock()
		if int32(t.next-from) < 0 || t.next-from > ringEntries {
			t.mu.Unlock()
			return nil, fmt.Errorf("%w: the neighbour took entries up to %d, this host reserved up to %d", errBadMeta, from, t.next)
		}
		// The link is cut, so every entry still lent goes round the
		// other way from a copy. A lent entry's source stays unchanged
		// until its put settles it, which takes t.mu as this does.
		all := true
		for i := from; i != t.next; i++ {
			if !t.keptOK[i%ringEntries] && t.kept[i%ringEntries].lender != 0 {
				t.own(i)
			}
			all = all && t.keptOK[i%ringEntries]
		}
		if all {
			out := make([]keptEntry, 0, t.next-from)
			for i := from; i != t.next; i++ {
				k := t.kept[i%ringEntries]
				out = append(out, keptEntry{m: k.m, data: append([]byte(nil), k.data...)})
			}
			t.mu.Unlock()
			return out, nil
		}
		t.mu.Unlock()
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("entries %d to %d were never written: %w", from, t.next, core.ErrTimeout)
		}
		// A sleep now and then lets a device's clock move where it is
		// virtual (ntb.VirtualClock) and stands still while this polls.
		if n%unsentYields == 0 {
			time.Sleep(time.Microsecond)
		} else {
			runtime.Gosched()
		}
	}
}

// unsentYields is how many times unsent yields between sleeps.
const unsentYields = 1024

// isCut reports whether a device error means the link went down: the
// entry being sent is kept and goes the other way round.
func isCut(err error) bool { return errors.Is(err, ntb.ErrLinkDown) }
