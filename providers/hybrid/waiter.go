package hybrid

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
)

// The composite's core.LocalWaiter. A PE's memory is written by two kinds
// of writer: PEs of its host, through the shared memory of the intra-host
// transport, which wakes that transport's sleepers (a futex, or a pipe in
// the runtime's poller); and PEs of other hosts, through the inter-host
// transport, whose progress goroutines wake its own sleepers. No one
// sleep hears both, so a waiter arms both transports on the bytes it
// watches, as it would either, and one of two ways joins them.
//
// Poked, where the intra-host transport can be poked (core.WaitPoker) and
// the inter-host one tells of its changes (core.WaitNotifier), as
// loopback and tcp or ntbring do: the waiter sleeps in the intra-host
// transport's WaitChange, and the inter-host one's progress goroutines
// poke it after every write to watched bytes. A wake-up is one hand-off,
// from the writer (or the goroutine that applied its frame) to the
// waiter; with two runtime processors a namespaced 2x2 barrier took about
// half the time of the forwarded way (docs/measuring.md, "Poked
// waiters").
//
// Forwarded, otherwise (an inter-host transport out of process): the
// waiter sleeps on the composite's own event; two forwarders, goroutines
// that live while waiters are armed (and a little after, for the next
// wait), sleep each in one transport's WaitChange and notify the event
// when its sequence moves, which it does only for writes to watched
// bytes.
//
// Either way the waiter re-checks its condition at every notice, as
// LocalWaiter's callers do. Without this, waits backed off in sleeps
// growing to a millisecond; with a sleep on one transport alone, a signal
// through the other was seen only at the end of the caller's max.

// forwarderLinger is how long the forwarders stay armed after the last
// waiter disarmed: collectives wait again at once, and a forwarder armed
// late could miss the store its waiter waits for (it would be seen at the
// end of the waiter's max only).
const forwarderLinger = 50 * time.Millisecond

// waiting is the composite waiter's state.
type waiting struct {
	intra, inter core.LocalWaiter // nil where a transport has none
	// poked: waiters sleep in intra, which inter pokes (no forwarders).
	poked bool

	ev  core.Event    // waiters sleep here
	seq atomic.Uint32 // bumped by the forwarders at every change
	// intraSeq and interSeq are the transports' sequences as the last
	// waiter armed them: where a forwarder starts from.
	intraSeq, interSeq atomic.Uint32
	armed              atomic.Int32 // waiters armed now
	last               atomic.Int64 // when the last waiter disarmed, in unix ns

	wake  core.Event // forwarders sleep here while nobody waits
	start sync.Once
	stop  chan struct{}
	done  sync.WaitGroup
}

var _ core.LocalWaiter = (*domain)(nil)

// WaitArm implements core.LocalWaiter: it arms each transport on its view
// of r, so that a write to the watched bytes by either moves that
// transport's sequence: the inter-host one's pokes the intra-host one's,
// which the waiter sleeps on; or each has a forwarder sleeping on it.
// The intra-host transport is armed first, so a write through the
// inter-host one before that one's arm is seen by the caller's check of
// its condition, and one after it pokes past the sequence returned.
func (d *domain) WaitArm(r core.Region, off, n int) (uint32, int) {
	w := &d.waiting
	var ir, xr core.Region
	if reg, ok := r.(*region); ok && reg.d == d {
		ir, xr = reg.intra, reg.inter
	}
	iw, xw := -1, -1
	var is, xs uint32
	if w.intra != nil {
		is, iw = w.intra.WaitArm(ir, off, n)
	}
	if w.inter != nil {
		xs, xw = w.inter.WaitArm(xr, off, n)
	}
	if w.poked {
		return is, packWatch(iw, xw)
	}
	// Where the forwarders start from: stored after both arms, a start
	// from an older sequence is a spurious notice, never a missed one.
	w.intraSeq.Store(is)
	w.interSeq.Store(xs)
	seq := w.seq.Load()
	w.armed.Add(1)
	w.start.Do(func() {
		if w.intra != nil {
			w.done.Add(1)
			go w.forward(w.intra, &w.intraSeq)
		}
		if w.inter != nil {
			w.done.Add(1)
			go w.forward(w.inter, &w.interSeq)
		}
	})
	w.wake.Notify()
	return seq, packWatch(iw, xw)
}

// WaitChange implements core.LocalWaiter: it sleeps in the intra-host
// transport, or until a forwarder reports a change, or until max passes.
func (d *domain) WaitChange(seq uint32, max time.Duration) uint32 {
	w := &d.waiting
	if w.poked {
		if d.closed.Load() {
			return seq
		}
		return w.intra.WaitChange(seq, max)
	}
	if max > 0 && !d.closed.Load() {
		_ = w.ev.Block(func() bool { return w.seq.Load() != seq || d.closed.Load() }, max, nil) // timed out or changed: the caller re-checks alike
	}
	return w.seq.Load()
}

// WaitDisarm implements core.LocalWaiter.
func (d *domain) WaitDisarm(watch int) {
	w := &d.waiting
	iw, xw := unpackWatch(watch)
	if w.intra != nil {
		w.intra.WaitDisarm(iw)
	}
	if w.inter != nil {
		w.inter.WaitDisarm(xw)
	}
	if w.poked {
		return
	}
	w.last.Store(time.Now().UnixNano())
	w.armed.Add(-1)
}

// setup picks how waiters sleep, given the two transports: poked where
// intra can be poked and inter tells of its changes, else forwarded.
func (w *waiting) setup(intra, inter core.Domain) {
	w.intra, _ = intra.(core.LocalWaiter)
	w.inter, _ = inter.(core.LocalWaiter)
	w.stop = make(chan struct{})
	p, pok := intra.(core.WaitPoker)
	n, nok := inter.(core.WaitNotifier)
	if pok && nok && w.intra != nil && w.inter != nil {
		w.poked = true
		n.SetWaitNotify(p.WaitPoke)
		// The waiter, sleeping in intra, may yield its CPU first while
		// no input waits for inter's goroutines.
		y, yok := intra.(core.WaitYielder)
		in, iok := inter.(core.InputPender)
		if yok && iok {
			y.SetWaitYield(in.InputPending)
		}
	}
}

// packWatch carries two transports' watches (32-bit values) in one int.
func packWatch(intra, inter int) int {
	return int(int64(intra)<<32 | int64(uint32(inter)))
}

func unpackWatch(w int) (intra, inter int) {
	return int(int32(int64(w) >> 32)), int(int32(uint32(w)))
}

// forward sleeps in x while waiters are armed or were a moment ago, and
// reports every move of x's sequence, which starts at *from, to the
// composite's waiters; it returns when the domain closes.
func (w *waiting) forward(x core.LocalWaiter, from *atomic.Uint32) {
	defer w.done.Done()
	active := func() bool {
		return w.armed.Load() > 0 || time.Now().UnixNano()-w.last.Load() < int64(forwarderLinger)
	}
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		if !active() {
			_ = w.wake.Block(func() bool { return w.armed.Load() > 0 || w.stopped() }, time.Second, nil)
			continue
		}
		// A sequence older than the waiter's arm returns at once: a
		// spurious notice, never a missed one.
		seq := from.Load()
		for active() && !w.stopped() {
			s := x.WaitChange(seq, waitStep)
			if s != seq {
				w.notify()
			}
			seq = s
		}
	}
}

// waitStep bounds a forwarder's sleep, so it notices that the waiters
// left or the domain closed.
const waitStep = 5 * time.Millisecond

func (w *waiting) notify() {
	w.seq.Add(1)
	w.ev.Notify()
}

func (w *waiting) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// close stops the forwarders and waits for them, before the transports
// close under them.
func (w *waiting) close() {
	if w.stop == nil {
		return
	}
	close(w.stop)
	w.wake.Notify()
	w.done.Wait()
	w.ev.Notify()
}
