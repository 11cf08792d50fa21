package ntbring

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
)

// op is one request in flight: a piece of a put waiting for its ack, a get
// waiting for its data, an atomic waiting for the old value. Whoever takes
// it out of the pending table finishes it, exactly once.
type op struct {
	tag   uint32
	pe    int
	ctr   *core.Counter // counted on the endpoint's counter, if not nil
	seq   uint64        // its number on ctr
	dst   []byte        // where a get's data goes
	old   uint64        // a fetching atomic's result
	err   error
	start time.Time
	// acks is how many more put-acks the op waits for after the next one:
	// a put sent as several pieces under one tag completes with its last
	// piece's ack.
	acks atomic.Int32
	// done is signalled once when the op finishes, for callers that wait
	// for this op alone (blocking get, fetching atomic); nil otherwise.
	done chan struct{}
	// req is the payload of the op's request (a get's or an atomic's),
	// and val the data of a GetValue: kept in the op, which lives on the
	// heap anyway, a buffer that the protocol's send takes costs no
	// allocation of its own.
	req [amoRequestSize]byte
	val [8]byte
}

// pending is the table of ops in flight, by tag.
type pending struct {
	next atomic.Uint32
	mu   sync.Mutex
	ops  map[uint32]*op
}

func newPending() *pending { return &pending{ops: map[uint32]*op{}} }

// add gives o a tag and enters it.
func (p *pending) add(o *op) {
	o.start = time.Now()
	p.mu.Lock()
	for {
		o.tag = p.next.Add(1)
		// Tag 0 is no op: a landed notice with tag 0 wants no ack.
		if _, busy := p.ops[o.tag]; !busy && o.tag != 0 {
			break
		}
	}
	p.ops[o.tag] = o
	p.mu.Unlock()
}

// take removes the op with tag and returns it, or nil if there is none
// (a stale or forged response, or one that arrived after its op expired).
func (p *pending) take(tag uint32) *op {
	p.mu.Lock()
	o := p.ops[tag]
	delete(p.ops, tag)
	p.mu.Unlock()
	return o
}

// peek returns the op with tag without removing it.
func (p *pending) peek(tag uint32) *op {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ops[tag]
}

// takeIf removes and returns the ops for which match is true.
func (p *pending) takeIf(match func(*op) bool) []*op {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*op
	for t, o := range p.ops {
		if match(o) {
			out = append(out, o)
			delete(p.ops, t)
		}
	}
	return out
}

// finish completes an op taken out of the table.
func (o *op) finish(err error) {
	o.err = err
	if o.ctr != nil {
		if err != nil {
			o.ctr.Fail(o.seq, err)
		} else {
			o.ctr.Complete(o.seq, 1)
		}
	}
	if o.done != nil {
		o.done <- struct{}{}
	}
}

// lostError is what an op that got no answer in time ends with.
func lostError(pe int, after time.Duration) error {
	return &core.PeerLostError{PE: pe, Reason: fmt.Sprintf("no answer within %v", after)}
}
