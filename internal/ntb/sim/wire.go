package sim

import (
	"math"
	"sync"
	"time"
)

// wire is one direction of one link: the flows crossing it share its
// rate equally (processor sharing), so flows that start at the same
// virtual instant finish at the same instant whatever order they were
// started in, and the figures do not depend on how goroutines were
// scheduled.
type wire struct {
	rate float64 // wire bytes per nanosecond

	mu    sync.Mutex
	flows []*flow
	last  time.Time   // when the flows' remainders were last brought up to date
	timer *time.Timer // fires when the next flow finishes
	// Bytes counts the wire bytes carried, for the experiments' use.
	bytes int64
}

type flow struct {
	rem  float64 // wire bytes still to cross
	done chan struct{}
}

func newWire(bytesPerSec float64) *wire { return &wire{rate: bytesPerSec / 1e9} }

// carry blocks until n wire bytes have crossed, sharing the wire with
// the other flows on it.
func (w *wire) carry(n int64) {
	if n <= 0 {
		return
	}
	f := &flow{rem: float64(n), done: make(chan struct{})}
	w.mu.Lock()
	w.advance(time.Now())
	w.flows = append(w.flows, f)
	w.bytes += n
	w.reschedule()
	w.mu.Unlock()
	<-f.done
}

// carried is the wire bytes carried so far.
func (w *wire) carried() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes
}

// advance takes from each flow its share of what crossed since last.
func (w *wire) advance(now time.Time) {
	if len(w.flows) > 0 {
		share := w.rate * float64(now.Sub(w.last)) / float64(len(w.flows))
		for _, f := range w.flows {
			f.rem -= share
		}
	}
	w.last = now
}

// reschedule ends the flows that crossed and arms the timer for the next.
func (w *wire) reschedule() {
	const done = 1e-3 // a thousandth of a byte: rounding
	kept := w.flows[:0]
	for _, f := range w.flows {
		if f.rem <= done {
			close(f.done)
		} else {
			kept = append(kept, f)
		}
	}
	clear(w.flows[len(kept):])
	w.flows = kept
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if len(w.flows) == 0 {
		return
	}
	least := math.Inf(1)
	for _, f := range w.flows {
		least = min(least, f.rem)
	}
	wait := time.Duration(math.Ceil(least * float64(len(w.flows)) / w.rate))
	w.timer = time.AfterFunc(max(wait, 1), w.tick)
}

func (w *wire) tick() {
	w.mu.Lock()
	w.advance(time.Now())
	w.reschedule()
	w.mu.Unlock()
}
