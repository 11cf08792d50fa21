package ntbring

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
)

// The ring protocol keeps everything of a link direction in the
// receiver's inbound window 0 (the ring window), as ntb_transport and
// DPDK's raw/ntb driver do, so that nothing on the data path reads across
// the link:
//
//	[0, 64)        producer index of the ring into this host (the sender writes)
//	[64, 128)      consumer index of this host's ring into the neighbour
//	               (the neighbour writes it back)
//	[128, 192)     the neighbour's "sleeping" word: it waits for a doorbell
//	[192, 256)     one past the last landed notice of this host's that the
//	               neighbour has acted on (written back)
//	[256, 320)     one past the last entry of this host's ring that the
//	               neighbour has taken: read, and handed to a worker or
//	               acted on (written back; see txRing.lend)
//	[4K, dataOff)  ringEntries descriptors of descSize bytes
//	[dataOff, end) ringEntries data slots of SLOT_SIZE bytes
//
// Entry i of the ring uses descriptor and data slot i mod ringEntries.
const (
	offProd      = 0
	offCons      = 64
	offSleep     = 128
	offLanded    = 192
	offTaken     = 256
	offDescs     = 4 << 10
	ringEntries  = 16
	descAreaSize = (ringEntries*descSize + 4<<10 - 1) / (4 << 10) * (4 << 10)
	offData      = offDescs + descAreaSize

	// bypassCredits are the entries of every ring that only relayed
	// transfers and answers may take: a host's own operations never fill
	// a ring so far that traffic it passes on must wait behind them.
	bypassCredits = ringEntries / 4

	// pioMax is the largest payload a sender writes with stores through
	// the window; larger ones go by DMA, whose set-up cost they amortise.
	pioMax = 4 << 10

	// dbRing is the doorbell bit that wakes a sleeping receiver.
	dbRing = 0
)

// ringWindowSize is the size of a ring window with data slots of slot
// bytes.
func ringWindowSize(slot int) int64 { return offData + ringEntries*int64(slot) }

// word returns the 32-bit word at off of window b.
func word(b []byte, off int) *uint32 { return mem.Word32(b, off) }

// rlink is one port of this host in the ring protocol: the sending half
// of the ring into the neighbour (tx) and the receiving half of the ring
// from it (rx).
type rlink struct {
	side      ntb.Side
	port      ntb.Port
	peer      int
	epoch     uint32 // this end's, random per link-up: its descriptors carry it
	peerEpoch uint32 // from the neighbour's hello
	slotSize  int
	in, out   []byte // ring windows: ours (inbound) and the neighbour's

	dma     []ntb.DMAChannel
	dmaNext atomic.Uint32
	// virtual is set on a device whose time is virtual
	// (ntb.VirtualClock): polls there are bounded by a count, for the
	// clock stands still while anything polls.
	virtual bool

	tx txRing
	rx rxRing

	// down is set once the link is cut (reroute.go); resent once the
	// neighbour's cut notice came and the entries it did not take were
	// resent the other way round; rxDone once this end's receiver sent
	// its own notice and stopped. noticeTimer fails the domain if the
	// neighbour's notice does not come.
	down        atomic.Bool
	resent      atomic.Bool
	rxDone      atomic.Bool // the receiver stopped after the cut
	cutMu       sync.Mutex
	noticeTimer *time.Timer

	// direct caches the neighbour's region windows by window: nil where
	// the neighbour has none, so puts go through the ring.
	directMu sync.Mutex
	direct   map[int][]byte

	// words are the link's words that a second implementation of direct
	// puts in this process reads (PROTOCOL.md): wordUp, and wordNotice,
	// which tx.notice points at. Outside the Go heap where the system
	// can map memory, so that C code may keep their address.
	words       []byte
	wordsShared bool // words are outside the Go heap
}

// The link's words (PROTOCOL.md), each on a cache line of its own.
const (
	wordUp     = 0  // 1 while stores through the link's windows may be left as they are
	wordNotice = 64 // one past the entry of the last landed notice sent
	wordsSize  = 4 << 10
)

// newWords maps a link's words outside the Go heap, or makes them in it
// where the system cannot (then no window map is offered: windowWords).
func newWords() ([]byte, bool) {
	if b, err := sys.MapPrivate(wordsSize); err == nil {
		return b, true
	}
	return make([]byte, wordsSize), false
}

// setUp says whether stores through the link's windows may stand: 1 from
// the link's creation until it is cut, the domain fails or closes.
func (l *rlink) setUp(up bool) {
	v := uint32(0)
	if up {
		v = 1
	}
	atomic.StoreUint32(word(l.words, wordUp), v)
}

func newRlink(side ntb.Side, port ntb.Port, peer, slotSize int) (*rlink, error) {
	l := &rlink{side: side, port: port, peer: peer, slotSize: slotSize, direct: map[int][]byte{}, epoch: rand.Uint32() | 1}
	if vc, ok := port.(ntb.VirtualClock); ok && vc.VirtualTime() {
		l.virtual = true
		l.rx.flight = vc.StoreFlight()
	}
	l.words, l.wordsShared = newWords()
	l.tx.notice = word(l.words, wordNotice)
	l.setUp(true)
	switch {
	case port.DBValidMask()&dbRingNeeded != dbRingNeeded:
		return nil, fmt.Errorf("%s port has doorbell bits %#x; the ring protocol needs %#x: %w",
			side, port.DBValidMask(), uint64(dbRingNeeded), core.ErrNotSupported)
	case port.MWCount() < 1 || port.PeerMWCount() < 1:
		return nil, fmt.Errorf("%s port has no memory window: %w", side, core.ErrNotSupported)
	case port.SpadCount() < ringHelloWords:
		return nil, fmt.Errorf("%s port has %d scratchpads, the hello needs %d: %w", side, port.SpadCount(), ringHelloWords, core.ErrNotSupported)
	case port.DMAChannels() < 1:
		return nil, fmt.Errorf("%s port has no DMA channel: %w", side, core.ErrNotSupported)
	}
	for c := range port.DMAChannels() {
		ch, err := port.DMA(c)
		if err != nil {
			return nil, fmt.Errorf("%s port: DMA channel %d: %w", side, c, err)
		}
		l.dma = append(l.dma, ch)
	}
	l.tx.done = make([]chan error, ringEntries)
	l.tx.doneCB = make([]func(error), ringEntries)
	for i := range ringEntries {
		c := make(chan error, 1)
		l.tx.done[i], l.tx.doneCB[i] = c, func(err error) { c <- err }
	}
	l.rx.kick = make(chan struct{}, 1)
	return l, nil
}

// dbRingNeeded are the doorbell bits the ring protocol uses.
const dbRingNeeded = 1<<dbRing | dbAlarmMask | 1<<dbBarrierStart | 1<<dbBarrierEnd

func (l *rlink) linkError(what string, err error) error { return portError(l.side, l.peer, what, err) }

// setInbound points the ring window at a fresh buffer.
func (l *rlink) setInbound() error {
	size := ringWindowSize(l.slotSize)
	_, sizeAlign, maxSize, err := l.port.MWAlign(0)
	if err != nil {
		return fmt.Errorf("%s port: window 0: %w", l.side, err)
	}
	if sizeAlign > 0 && size%sizeAlign != 0 || maxSize > 0 && size > maxSize {
		return fmt.Errorf("%s port: a ring window of %d bytes does not fit the device (size alignment %d, largest %d; lower %s): %w",
			l.side, size, sizeAlign, maxSize, paramSlot.Env, core.ErrInvalid)
	}
	if l.in, err = l.port.MWSetTrans(0, size); err != nil {
		return fmt.Errorf("%s port: set window 0: %w", l.side, err)
	}
	return nil
}

// mapOutbound maps the neighbour's ring window and lays both rings out.
func (l *rlink) mapOutbound() error {
	b, err := l.port.PeerMW(0)
	if err != nil {
		return fmt.Errorf("%s port: map the neighbour's ring window: %w", l.side, err)
	}
	if int64(len(b)) < ringWindowSize(l.slotSize) {
		return fmt.Errorf("%s port: the neighbour's ring window has %d bytes, want %d (is %s the same on every host?): %w",
			l.side, len(b), ringWindowSize(l.slotSize), paramSlot.Env, core.ErrInvalid)
	}
	l.out = b
	l.tx.prod, l.tx.cons, l.tx.sleep, l.tx.landed = word(l.out, offProd), word(l.in, offCons), word(l.in, offSleep), word(l.in, offLanded)
	l.tx.taken, l.rx.taken = word(l.in, offTaken), word(l.out, offTaken)
	l.tx.descs, l.tx.data = l.out[offDescs:offData], l.out[offData:]
	l.rx.prod, l.rx.cons, l.rx.sleep, l.rx.landed = word(l.in, offProd), word(l.out, offCons), word(l.out, offSleep), word(l.out, offLanded)
	l.rx.descs, l.rx.data = l.in[offDescs:offData], l.in[offData:]
	return nil
}

// slot is entry i's data slot in a data area.
func (l *rlink) slot(data []byte, i uint32) []byte {
	base := int(i%ringEntries) * l.slotSize
	return data[base : base+l.slotSize]
}

// copyOut moves src into dst, which lies in a window of this port: by
// stores for small payloads, by DMA (and waiting for it) otherwise. done
// and cb are a completion channel and its callback the caller owns. It
// returns the device's error as it is: see isCut.
func (l *rlink) copyOut(dst, src []byte, done chan error, cb func(error)) error {
	if len(src) <= pioMax {
		copy(dst, src)
		return nil
	}
	c := l.dma[l.dmaNext.Add(1)%uint32(len(l.dma))]
	if err := c.Submit(dst, src, cb); err != nil {
		return err
	}
	return <-done
}

// sendErr is what a device error while sending entry becomes: nothing if
// the link went down, for the entry is kept and resent round the cut,
// else a link error.
func (l *rlink) sendErr(what string, err error) error {
	if err == nil || isCut(err) {
		return nil
	}
	return l.linkError(what, err)
}

// directWindow is the neighbour's window onto its region idx at one PE
// per host, or nil if it has none (too many regions for its windows, or
// too large).
func (l *rlink) directWindow(idx uint8) []byte { return l.windowAt(1 + int(idx)) }

// windowAt is the neighbour's window w, or nil if it has not translated
// it (see ringProto.window for which region and PE it maps).
func (l *rlink) windowAt(w int) []byte {
	l.directMu.Lock()
	defer l.directMu.Unlock()
	if b, ok := l.direct[w]; ok {
		return b
	}
	var b []byte
	if w < l.port.PeerMWCount() {
		b, _ = l.port.PeerMW(w) // no translation: no direct landing
	}
	l.direct[w] = b
	return b
}

// txRing is the sending half of a link: entries are reserved in order,
// filled by whoever reserved them, and published in order, as many at
// once as are ready, with one store of the producer index.
type txRing struct {
	mu   sync.Mutex
	next uint32  // the next entry to reserve
	pub  inOrder // entries ready; pub.at of them published

	prod   *uint32 // in the neighbour's window
	cons   *uint32 // in ours: the neighbour writes back what it consumed
	sleep  *uint32 // in ours: the neighbour waits for a doorbell
	landed *uint32 // in ours: one past the last landed notice acted on
	taken  *uint32 // in ours: one past the last entry the neighbour took
	descs  []byte  // the neighbour's descriptors
	data   []byte  // the neighbour's data slots

	// notice is one past the entry of the last landed notice of a direct
	// put (wordNotice of the link's words, which C code reads too); fence
	// orders a put's stores before the look at landed.
	notice *uint32
	fence  atomic.Uint32

	// down (under mu) refuses every reservation: the link is cut. kept
	// holds a copy of every entry, keptOK whether entry i's is complete;
	// a lent entry's is the sender's memory, and not complete until it is
	// copied (see lend).
	down   bool
	kept   [ringEntries]keptEntry
	keptOK [ringEntries]bool

	done   []chan error // DMA completion by entry
	doneCB []func(error)
}

// reserve takes the next entry if the ring has room: all of it for
// relays and answers, all but bypassCredits for a host's own operations.
func (t *txRing) reserve(own bool) (uint32, bool) {
	limit := uint32(ringEntries)
	if own {
		limit -= bypassCredits
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down || t.next-atomic.LoadUint32(t.cons) >= limit {
		return 0, false
	}
	i := t.next
	t.next++
	k := &t.kept[i%ringEntries]
	k.data, k.lender = nil, 0
	t.keptOK[i%ringEntries] = false
	return i, true
}

// publish marks entry i ready and publishes every ready entry in order
// with one store; it reports whether the neighbour must be woken.
func (t *txRing) publish(i uint32) (wake bool) {
	t.mu.Lock()
	moved := t.pub.mark(i, t.next)
	if moved {
		atomic.StoreUint32(t.prod, t.pub.at)
	}
	t.mu.Unlock()
	// The receiver sets sleeping, then looks at the producer index once
	// more: one of the two sides sees the other's store.
	return moved && atomic.LoadUint32(t.sleep) != 0
}

// noticePending reports whether a landed notice this host sent is still
// to be acted on by the neighbour; the caller has just stored a put's
// bytes into the neighbour's memory. The neighbour records a notice as
// acted on before it wakes its waiters, so if it has not recorded the
// last one yet, that notice's wake-up comes after these bytes and covers
// them: the put needs no notice of its own.
func (t *txRing) noticePending() bool {
	t.fence.Add(1) // a locked instruction: the put's stores are visible before the load
	n := atomic.LoadUint32(t.notice)
	return n != 0 && int32(atomic.LoadUint32(t.landed)-n) < 0
}

// put fills reserved entry i with m and payload and publishes it. A
// landed notice has no payload: its m.size is what landed.
func (l *rlink) put(i uint32, m meta, payload []byte) error {
	t := &l.tx
	if m.kind != kindLanded { // a landed notice carries the size that landed
		m.size = uint32(len(payload))
	}
	t.keep(i, m, payload)
	if len(payload) > 0 {
		if err := l.copyOut(l.slot(t.data, i), payload, t.done[i%ringEntries], t.doneCB[i%ringEntries]); err != nil {
			return l.sendErr("copy into the ring", err)
		}
	}
	return l.announce(i, m)
}

// announce writes entry i's descriptor, whose payload is in place, and
// publishes it.
func (l *rlink) announce(i uint32, m meta) error {
	t := &l.tx
	w := m.encodeDesc(i, l.epoch)
	storeDesc(descAt(t.descs, int(i%ringEntries)), &w)
	if t.publish(i) {
		return l.sendErr("ring doorbell", l.port.PeerDBSet(1<<dbRing))
	}
	return nil
}

// channel is the DMA channel of a stream, the transfers to one host: they
// take one channel, so they cross one after the other, each at the link's
// full rate, and a relay forwards the first piece while the next crosses.
// Spread over the channels, they would share the link and all arrive
// late together, and the relay would store and forward whole puts, or
// whole batches of non-blocking ones. Streams to other hosts take other
// channels.
func (l *rlink) channel(stream uint32) ntb.DMAChannel { return l.dma[stream%uint32(len(l.dma))] }

// streamOf is the stream of a transfer: its destination.
func streamOf(m meta) uint32 { return uint32(m.dst) }

// putAsync is put for a payload that goes by DMA on stream's channel,
// without waiting: the DMA's completion announces the entry, then calls
// done, which must not block. It returns an error only if the DMA could
// not be queued, and then done is not called.
func (l *rlink) putAsync(i uint32, m meta, payload []byte, stream uint32, done func(error)) error {
	m.size = uint32(len(payload))
	l.tx.keep(i, m, payload)
	return l.sendAsync(i, m, payload, l.channel(stream), done)
}

// putLent is putAsync for a payload that stays unchanged until lender
// settles the entry (txRing.settle): it is not copied unless it must be.
func (l *rlink) putLent(i uint32, m meta, payload []byte, lender uint64, done func(error)) error {
	m.size = uint32(len(payload))
	l.tx.lend(i, m, payload, lender)
	return l.sendAsync(i, m, payload, l.channel(streamOf(m)), done)
}

// sendAsync queues the DMA of entry i's payload on c; see putAsync.
func (l *rlink) sendAsync(i uint32, m meta, payload []byte, c ntb.DMAChannel, done func(error)) error {
	err := c.Submit(l.slot(l.tx.data, i), payload, func(err error) {
		if err != nil {
			err = l.sendErr("DMA", err)
		} else {
			err = l.announce(i, m)
		}
		done(err)
	})
	if err != nil && isCut(err) {
		done(nil) // kept: it goes round the cut
		return nil
	}
	if err != nil {
		return l.linkError("submit DMA", err)
	}
	return nil
}

// dmaAsync copies src into dst, which lies in a window of this port, by
// DMA on stream's channel without waiting; done is called on completion
// and must not block. If the DMA cannot be queued, done is not called and
// the device's error is returned as it is, for the caller to handle as it
// handles done's (see isCut).
func (l *rlink) dmaAsync(dst, src []byte, stream uint32, done func(error)) error {
	return l.channel(stream).Submit(dst, src, done)
}

// rxRing is the receiving half of a link. One goroutine reads entries in
// order; entries are released in any order (workers finish them), and
// the consumer index written back covers the released prefix.
type rxRing struct {
	next uint32 // the next entry to read, by the receive loop

	mu    sync.Mutex
	freed inOrder // entries released; freed.at is the consumer index written back

	prod   *uint32 // in our window
	cons   *uint32 // in the neighbour's
	sleep  *uint32 // in the neighbour's
	landed *uint32 // in the neighbour's
	taken  *uint32 // in the neighbour's
	descs  []byte
	data   []byte
	kick   chan struct{} // the doorbell rang
	look   *time.Timer   // wakes a sleeping receive loop to look again
	// worked is when the receive loop last took an entry other than a
	// landed notice: a relayed piece, a request or an answer.
	worked time.Time
	// flight is what the receive loop charges when its polling finds an
	// entry, on a device in virtual time (ntb.VirtualClock.StoreFlight):
	// the flight of the stores that published it. 0 elsewhere.
	flight time.Duration
}

// release frees entry i for the sender.
func (r *rxRing) release(i uint32) {
	r.mu.Lock()
	// Released entries were read, so the prefix never passes the
	// reader; r.next is the receive loop's, so bound by the ring instead.
	if r.freed.mark(i, r.freed.at+ringEntries) {
		atomic.StoreUint32(r.cons, r.freed.at)
	}
	r.mu.Unlock()
}

// consumed is the consumer index written back so far.
func (r *rxRing) consumed() uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.freed.at
}

// inOrder is a ring index that moves over entries finished out of order:
// it covers the longest prefix of finished entries.
type inOrder struct {
	at   uint32
	done [ringEntries]bool
}

// mark records entry i finished and moves at past every finished entry
// that follows it in order, stopping at end; it reports whether at moved.
func (o *inOrder) mark(i, end uint32) (moved bool) {
	o.done[i%ringEntries] = true
	for o.at != end && o.done[o.at%ringEntries] {
		o.done[o.at%ringEntries] = false
		o.at++
		moved = true
	}
	return moved
}

// wait waits for an entry, a doorbell or the link being cut: it polls,
// yielding, idleYields times and then for what remains of poll, then says
// it sleeps, looks once more, and waits for the doorbell. It returns false
// when stop closes.
//
// Within lookFast of the last entry that was work (see worked), a
// sleeping receiver also looks at the producer index every lookStep. A
// doorbell reaches it through the device's interrupt path; the emulated
// device's is Go's network poller, which a process whose processors are
// kept busy by polling goroutines serves late, while it serves a timer
// on time. A relay whose receiver dozed between the pieces of a stream
// held the stream up by hundreds of microseconds at a time. Landed
// notices only wake waiters: after them a receiver sleeps until the
// doorbell. In an idle process the doorbell comes first, and a look
// costs a timer.
func (r *rxRing) wait(stop <-chan struct{}, poll time.Duration, cut *atomic.Bool) bool {
	var deadline time.Time
	for n := 1; ; n++ {
		if atomic.LoadUint32(r.prod) != r.next || cut.Load() {
			if r.flight > 0 {
				time.Sleep(r.flight)
			}
			return true
		}
		if n >= idleYields {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(poll)
			}
			if !now.Before(deadline) {
				break
			}
		}
		runtime.Gosched()
	}
	atomic.StoreUint32(r.sleep, 1)
	defer atomic.StoreUint32(r.sleep, 0)
	for {
		if atomic.LoadUint32(r.prod) != r.next || cut.Load() {
			return true
		}
		var look <-chan time.Time
		if time.Since(r.worked) < lookFast {
			if r.look == nil {
				r.look = time.NewTimer(lookStep)
			} else {
				r.look.Reset(lookStep)
			}
			look = r.look.C
		}
		select {
		case <-r.kick:
			return true
		case <-stop:
			return false
		case <-look:
		}
	}
}

// A sleeping receiver looks at its ring every lookStep, about the time
// the DMA of a slot takes, for lookFast after it last took work: long
// enough to cover the gaps in a stream of puts and between a program's
// batches of them.
const (
	lookStep = 20 * time.Microsecond
	lookFast = 3 * time.Millisecond
)

// idleYields is how many times a receiver at least polls an empty ring
// before it sleeps.
const idleYields = 64

// idlePoll is how long a receiver polls an empty ring before it sleeps
// when every host can have a CPU of its own (ringProto.idlePoll). A
// sleeping receiver costs its sender a doorbell and itself a wake-up
// through the device's interrupt path, tens of microseconds on a loaded
// host, and a stream of small operations keeps a polling receiver awake;
// the loopback provider's waiters poll as long. When hosts outnumber
// CPUs, polling would take the CPU from the host that is to send.
const idlePoll = 200 * time.Microsecond

// waitCredit waits until reserve succeeds, the timeout passes or abort
// says the domain failed; on a link that is cut it returns errCut.
func (l *rlink) waitCredit(own bool, timeout time.Duration, abort func() error) (uint32, error) {
	var (
		i  uint32
		ok bool
	)
	try := func() bool {
		i, ok = l.tx.reserve(own)
		return ok || l.down.Load()
	}
	// Entries come back at the pace of the link, tens of microseconds
	// apart: poll for them by yielding first, for a sleep of a few
	// microseconds lasts tens or hundreds on a loaded host.
	if try() || l.yieldPoll(creditPoll, try) {
		if ok {
			return i, nil
		}
		return 0, errCut
	}
	deadline := time.Now().Add(timeout)
	pause := core.Backoff{Max: 200 * time.Microsecond}
	for n := 0; ; n++ {
		if l.down.Load() {
			return 0, errCut
		}
		pause.Pause()
		if i, ok := l.tx.reserve(own); ok {
			return i, nil
		}
		if n&63 == 63 {
			if err := abort(); err != nil {
				return 0, err
			}
			if time.Now().After(deadline) {
				return 0, &core.PeerLostError{PE: l.peer, Reason: fmt.Sprintf("%s link: no ring entry freed within %v", l.side, timeout)}
			}
		}
	}
}

// creditPoll is how long waitCredit polls before it sleeps: several
// times the DMA of a slot.
const creditPoll = 500 * time.Microsecond

// yieldPoll polls cond, yielding the CPU between looks (to the process's
// goroutines and to other processes), until it holds or d has passed; it
// reports whether cond held. On a device in virtual time it gives up
// after virtualPolls looks instead, the clock standing still meanwhile.
func (l *rlink) yieldPoll(d time.Duration, cond func() bool) bool {
	if l.virtual {
		for range virtualPolls {
			if cond() {
				return true
			}
			runtime.Gosched()
		}
		return cond()
	}
	return yieldPoll(d, cond)
}

// virtualPolls is how many looks a poll makes on a device in virtual
// time before it gives up: as many as a receiver makes (idleYields).
const virtualPolls = idleYields

// yieldPoll polls cond, yielding the CPU between looks (to the process's
// goroutines and to other processes), until it holds or d has passed; it
// reports whether cond held.
func yieldPoll(d time.Duration, cond func() bool) bool {
	var deadline time.Time
	for n := 0; ; n++ {
		if cond() {
			return true
		}
		if n&15 == 15 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(d)
			} else if now.After(deadline) {
				return false
			}
			sys.Yield()
		}
		runtime.Gosched()
	}
}
