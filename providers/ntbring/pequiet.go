package ntbring

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
)

// QuietPEs implements core.PEQuieter: it waits for the answers to the
// operations issued to the listed PEs before it began, and settles their
// non-blocking puts; operations to other PEs stay in flight. An
// operation that got no answer within the timeout fails its PE as lost,
// as Quiet's do.
func (e *endpoint) QuietPEs(pes []int) error {
	if err := e.CheckPEs("pe-quiet", pes); err != nil {
		return err
	}
	if len(pes) == 0 {
		return nil
	}
	listed := func(pe int) bool { return slices.Contains(pes, pe) }
	seq := e.counter.Issued()
	err := e.completeTo(seq, listed)
	e.settleTo(seq, listed)
	if err != nil {
		return e.Err("pe-quiet", -1, err)
	}
	return nil
}

// completeTo is complete for the operations to the PEs that to accepts:
// it waits until none numbered up to seq is in the pending table.
func (e *endpoint) completeTo(seq uint64, to func(pe int) bool) error {
	d := e.dom
	mine := func(o *op) bool { return o.ctr == &e.counter && o.seq <= seq && to(o.pe) }
	done := func() bool { return e.counter.CompletedUpTo() >= seq || !d.pending.any(mine) }
	for {
		err := e.counter.WaitFor(done, d.s.timeout, d.abort)
		if !errors.Is(err, core.ErrTimeout) {
			return err
		}
		old := time.Now().Add(-d.s.timeout)
		stale := d.pending.takeIf(func(o *op) bool { return mine(o) && o.start.Before(old) })
		if len(stale) > 0 {
			lost := lostError(stale[0].pe, d.s.timeout)
			for _, o := range stale {
				o.finish(lost)
			}
			return lost
		}
	}
}

// any says whether an op in the table matches.
func (p *pending) any(match func(*op) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.ops {
		if match(o) {
			return true
		}
	}
	return false
}

// heldAnswers are the answers set aside by HoldAcks, by the PE of the
// operation they end.
type heldAnswers struct {
	mu   sync.Mutex
	pes  map[int]bool
	kept []heldAnswer
}

type heldAnswer struct {
	m       meta
	payload []byte
}

// HoldAcks implements core.AckHolder: the answers that end this host's
// puts and non-fetching atomics to pe (put acks, the atomics' answers,
// nacks) are set aside as they arrive (answered), and applied, in the
// order they came, when the hold ends. Gets' answers and those a caller
// blocks for (a fetching atomic's) go on.
func (d *domain) HoldAcks(pe int, hold bool) {
	if pe < 0 || pe >= d.size || pe == d.pe {
		return
	}
	h := &d.held
	h.mu.Lock()
	if hold {
		if h.pes == nil {
			h.pes = map[int]bool{}
		}
		if !h.pes[pe] {
			h.pes[pe] = true
			d.holds.Add(1)
		}
		h.mu.Unlock()
		return
	}
	if !h.pes[pe] {
		h.mu.Unlock()
		return
	}
	delete(h.pes, pe)
	d.holds.Add(-1)
	var mine []heldAnswer
	keep := h.kept[:0]
	for _, a := range h.kept {
		if o := d.pending.peek(a.m.tag); o != nil && o.pe == pe {
			mine = append(mine, a)
		} else if o != nil {
			keep = append(keep, a)
		}
	}
	clear(h.kept[len(keep):])
	h.kept = keep
	h.mu.Unlock()
	for _, a := range mine {
		d.answered(a.m, a.payload)
	}
}

// holdAnswer sets m aside if it ends o, a non-blocking operation to a PE
// whose answers are held, and says whether it did.
func (d *domain) holdAnswer(o *op, m meta, payload []byte) bool {
	if o.done != nil || m.kind == kindGetResp {
		return false
	}
	h := &d.held
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.pes[o.pe] {
		return false
	}
	h.kept = append(h.kept, heldAnswer{m: m, payload: slices.Clone(payload)})
	return true
}
