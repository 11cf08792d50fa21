package ntbring

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
)

// The two memory windows of every port, as the seeds use them: the direct
// window carries payloads for the neighbour itself, the bypass window
// payloads the neighbour relays further round the ring.
const (
	mwDirect = 0
	mwBypass = 1
	nWindows = 2
)

// The doorbell bits: one per worker (doorbell_dmaputget[n]), six that
// carry the broken-ring alarm (the host lost, relative to the host that
// hears it: alarm.go), and the two of the ring barrier.
const (
	dbAlarmShift   = 8
	dbAlarmMask    = 0x3F << dbAlarmShift
	dbBarrierStart = 14
	dbBarrierEnd   = 15
	dbNeeded       = 1<<dbBarrierStart | 1<<dbBarrierEnd | dbAlarmMask | 1<<maxSlots - 1
)

// link is one port of this host and what the protocol keeps about it.
//
// Each direction of a link has slots data slots: slot i is bytes
// [i*slotSize, (i+1)*slotSize) of each window, and doorbell bit i. The
// metadata of a transfer goes through the receiver's scratchpads, in one of
// groups groups of metaWords words; slot i uses group i % groups. A
// sender holds a group from the moment it finds it free (word 0 zero, read
// across the link) until it has rung the doorbell; the receiver frees it
// by clearing word 0 once it has copied the payload out of the window.
type link struct {
	side     ntb.Side
	port     ntb.Port
	peer     int // the neighbour's host id
	slots    int
	slotSize int
	groups   int // metadata groups in the scratchpads

	in  [nWindows][]byte // inbound windows: the neighbour writes, we read
	out [nWindows][]byte // outbound windows: we write, the neighbour reads

	free    chan int        // free data slots, sender side
	sendSem []chan struct{} // per metadata group, sender side: full while a sender holds it
	recvMu  []sync.Mutex    // per metadata group, receiver side
	dma     []ntb.DMAChannel
	dmaDone []chan error // per data slot
	dmaCB   []func(error)
}

func newLink(side ntb.Side, port ntb.Port, peer, slots, slotSize int) (*link, error) {
	l := &link{side: side, port: port, peer: peer, slots: slots, slotSize: slotSize,
		groups: min(slots, port.SpadCount()/metaWords)}
	switch {
	case l.groups < 1:
		return nil, fmt.Errorf("%s port has %d scratchpads; the protocol needs at least %d: %w",
			side, port.SpadCount(), metaWords, core.ErrNotSupported)
	case port.DBValidMask()&dbNeeded != dbNeeded:
		return nil, fmt.Errorf("%s port has doorbell bits %#x; the protocol needs %#x: %w",
			side, port.DBValidMask(), dbNeeded, core.ErrNotSupported)
	case port.MWCount() < nWindows || port.PeerMWCount() < nWindows:
		return nil, fmt.Errorf("%s port has %d memory windows; the protocol needs %d: %w",
			side, port.MWCount(), nWindows, core.ErrNotSupported)
	case port.DMAChannels() < 1:
		return nil, fmt.Errorf("%s port has no DMA channel: %w", side, core.ErrNotSupported)
	}
	l.free = make(chan int, slots)
	for i := range slots {
		l.free <- i
	}
	l.sendSem = make([]chan struct{}, l.groups)
	for g := range l.sendSem {
		l.sendSem[g] = make(chan struct{}, 1)
	}
	l.recvMu = make([]sync.Mutex, l.groups)
	for c := range port.DMAChannels() {
		ch, err := port.DMA(c)
		if err != nil {
			return nil, fmt.Errorf("%s port: DMA channel %d: %w", side, c, err)
		}
		l.dma = append(l.dma, ch)
	}
	l.dmaDone = make([]chan error, slots)
	l.dmaCB = make([]func(error), slots)
	for i := range slots {
		c := make(chan error, 1)
		l.dmaDone[i] = c
		l.dmaCB[i] = func(err error) { c <- err }
	}
	return l, nil
}

// windowSize is the size of each window: every slot of every worker.
func (l *link) windowSize() int64 { return int64(l.slots) * int64(l.slotSize) }

// setInbound points both inbound windows at fresh buffers.
func (l *link) setInbound() error {
	for w := range nWindows {
		addrAlign, sizeAlign, maxSize, err := l.port.MWAlign(w)
		if err != nil {
			return fmt.Errorf("%s port: window %d: %w", l.side, w, err)
		}
		size := l.windowSize()
		if sizeAlign > 0 && size%sizeAlign != 0 || maxSize > 0 && size > maxSize {
			return fmt.Errorf("%s port: window %d of %d bytes does not fit the device (size alignment %d, largest %d, address alignment %d): %w",
				l.side, w, size, sizeAlign, maxSize, addrAlign, core.ErrInvalid)
		}
		if l.in[w], err = l.port.MWSetTrans(w, size); err != nil {
			return fmt.Errorf("%s port: set window %d: %w", l.side, w, err)
		}
	}
	return nil
}

// mapOutbound maps the neighbour's windows, once it has set them.
func (l *link) mapOutbound() error {
	for w := range nWindows {
		b, err := l.port.PeerMW(w)
		if err != nil {
			return fmt.Errorf("%s port: map the neighbour's window %d: %w", l.side, w, err)
		}
		if int64(len(b)) < l.windowSize() {
			return fmt.Errorf("%s port: the neighbour's window %d has %d bytes, want %d (do all hosts use the same %s and %s?): %w",
				l.side, w, len(b), l.windowSize(), paramWorkers.Env, paramSlot.Env, core.ErrInvalid)
		}
		l.out[w] = b
	}
	return nil
}

// slotTimeoutError is a link slot that stayed busy too long: the
// neighbour stopped taking transfers.
func (l *link) slotTimeoutError(after time.Duration) error {
	return &core.PeerLostError{PE: l.peer, Reason: fmt.Sprintf("%s link: no scratchpad slot freed within %v", l.side, after)}
}

// linkError turns a device error into the error an operation reports.
func (l *link) linkError(what string, err error) error { return portError(l.side, l.peer, what, err) }

// portError turns a device error on the link of side, facing host peer,
// into the error an operation reports: a link that went down is a lost
// peer.
func portError(side ntb.Side, peer int, what string, err error) error {
	if errors.Is(err, ntb.ErrLinkDown) || errors.Is(err, ntb.ErrClosed) {
		return &core.PeerLostError{PE: peer, Reason: fmt.Sprintf("%s link: %s: %v", side, what, err)}
	}
	return fmt.Errorf("%s link: %s: %w", side, what, err)
}

// send moves one transfer to the neighbour: it takes a data slot and its
// metadata group, DMAs payload into the slot of the right window, writes
// the metadata into the neighbour's scratchpads (word 0 last) and rings the
// slot's doorbell. It returns when payload may be reused. abort is
// consulted while waiting.
func (l *link) send(m meta, payload []byte, timeout time.Duration, abort func() error) error {
	var slot int
	deadline := time.Now().Add(timeout)
	select {
	case slot = <-l.free:
	default:
		t := time.NewTimer(timeout)
		tick := time.NewTicker(abortPoll)
		for done := false; !done; {
			select {
			case slot = <-l.free:
				done = true
			case <-tick.C:
				if err := abort(); err != nil {
					t.Stop()
					tick.Stop()
					return err
				}
			case <-t.C:
				tick.Stop()
				return l.slotTimeoutError(timeout)
			}
		}
		t.Stop()
		tick.Stop()
	}
	defer func() { l.free <- slot }()

	g := slot % l.groups
	if err := l.lockGroup(g, deadline, timeout, abort); err != nil {
		return err
	}
	defer l.unlockGroup(g)
	// Wait until the neighbour has consumed the group's last transfer.
	for i := 0; ; i++ {
		w0, err := l.port.PeerSpadRead(g * metaWords)
		if err != nil {
			return l.linkError("read scratchpad", err)
		}
		if w0 == 0 {
			break
		}
		if i&63 == 63 {
			if err := abort(); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return l.slotTimeoutError(timeout)
			}
		}
		pollPause(i)
	}

	return l.transmit(slot, g, m, payload)
}

// lockGroup takes metadata group g for a sender. Slots outnumber groups
// when there are more than two workers, so another sender of this host
// may hold the group, waiting itself for the neighbour to free it: the
// wait ends at this sender's own deadline, or when abort says so, however
// long the holder's lasts and however many others come and go.
func (l *link) lockGroup(g int, deadline time.Time, timeout time.Duration, abort func() error) error {
	select {
	case l.sendSem[g] <- struct{}{}:
		return nil
	default:
	}
	left := time.Until(deadline)
	if left <= 0 {
		return l.slotTimeoutError(timeout)
	}
	t := time.NewTimer(left)
	defer t.Stop()
	tick := time.NewTicker(abortPoll)
	defer tick.Stop()
	for {
		select {
		case l.sendSem[g] <- struct{}{}:
			return nil
		case <-tick.C:
			if err := abort(); err != nil {
				return err
			}
		case <-t.C:
			return l.slotTimeoutError(timeout)
		}
	}
}

// unlockGroup gives back group g, taken by lockGroup or trySend.
func (l *link) unlockGroup(g int) { <-l.sendSem[g] }

// trySend is send for a caller that must not wait: a worker answering or
// relaying. It sends only if a data slot is free and its scratchpad group
// is free at the first look, and reports whether it did; otherwise the
// caller queues the transfer for a forwarder.
func (l *link) trySend(m meta, payload []byte) (bool, error) {
	var slot int
	select {
	case slot = <-l.free:
	default:
		return false, nil
	}
	defer func() { l.free <- slot }()
	g := slot % l.groups
	select {
	case l.sendSem[g] <- struct{}{}:
	default:
		return false, nil
	}
	defer l.unlockGroup(g)
	w0, err := l.port.PeerSpadRead(g * metaWords)
	if err != nil {
		return false, l.linkError("read scratchpad", err)
	}
	if w0 != 0 {
		return false, nil
	}
	return true, l.transmit(slot, g, m, payload)
}

// transmit DMAs payload into data slot slot of the right window, writes
// the metadata into scratchpad group g (word 0 last) and rings the slot's
// doorbell. The caller holds the slot and the group, and has seen the
// group free.
func (l *link) transmit(slot, g int, m meta, payload []byte) error {
	win := mwBypass
	if int(m.dst) == l.peer {
		win = mwDirect
	}
	if len(payload) > 0 {
		base := slot * l.slotSize
		dst := l.out[win][base : base+len(payload)]
		if err := l.dma[slot%len(l.dma)].Submit(dst, payload, l.dmaCB[slot]); err != nil {
			return l.linkError("submit DMA", err)
		}
		if err := <-l.dmaDone[slot]; err != nil {
			return l.linkError("DMA", err)
		}
	}
	m.slot = uint8(slot)
	w := m.encode()
	if err := writePeerSpads(l.port, g*metaWords, w[:]); err != nil {
		return l.linkError("write scratchpad", err)
	}
	if err := l.port.PeerDBSet(1 << slot); err != nil {
		return l.linkError("ring doorbell", err)
	}
	return nil
}

// received is a transfer read out of a metadata group: its metadata and
// its payload in the inbound window, valid until release.
type received struct {
	m       meta
	payload []byte
	group   int
}

// receive reads metadata group g. It returns ok false when the group is
// free (a doorbell that arrived merged with an earlier one, or handled by
// another worker). On success the group stays locked until release. A
// group holding garbage is freed and reported as an error: the transfer
// is dropped.
func (l *link) receive(g int, lim metaLimits) (r received, ok bool, err error) {
	l.recvMu[g].Lock()
	var w [metaWords]uint32
	if err := readSpads(l.port, g*metaWords, w[:]); err != nil {
		l.recvMu[g].Unlock()
		return r, false, l.linkError("read scratchpad", err)
	}
	if w[0] == 0 {
		l.recvMu[g].Unlock()
		return r, false, nil
	}
	m, err := decodeMeta(w, lim)
	if err == nil && int(m.slot)%l.groups != g {
		err = fmt.Errorf("%w: slot %d announced in scratchpad group %d", errBadMeta, m.slot, g)
	}
	if err != nil {
		l.release(g)
		return r, false, fmt.Errorf("%s link, scratchpads %d-%d: %w", l.side, g*metaWords, g*metaWords+metaWords-1, err)
	}
	win := mwBypass
	if int(m.dst) == lim.self {
		win = mwDirect
	}
	base := int(m.slot) * l.slotSize
	return received{m: m, payload: l.in[win][base : base+int(m.size)], group: g}, true, nil
}

// release frees metadata group g for the sender's next transfer.
func (l *link) release(g int) {
	// A failed write means the link is down; the link event reports it.
	_ = l.port.SpadWrite(g*metaWords, 0)
	l.recvMu[g].Unlock()
}

// pollPause paces the i-th poll of a scratchpad across the link. Each poll
// is already a round trip of about a microsecond, so it spins only a few,
// then yields the CPU (the worker that frees the slot may need it: hosts
// outnumber cores in tests), and only then sleeps, briefly: the kernel
// makes even the shortest sleep tens of microseconds.
func pollPause(i int) {
	switch {
	case i < 4:
	case i < 256:
		runtime.Gosched()
		if i&7 == 7 {
			sys.Yield()
		}
	default:
		time.Sleep(time.Duration(min(i-255, 100)) * time.Microsecond)
	}
}
