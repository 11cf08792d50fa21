package tcp

import (
	"sync"
	"sync/atomic"
)

// ackHold is a connection's acks set aside by domain.HoldAcks: while on,
// the ack the peer last sent is kept here instead of completing anything,
// as if the peer were slow to send it; acks count in all, so the last
// one stands for every one before it.
type ackHold struct {
	on    atomic.Bool // read by every ack: one load while nothing is held
	mu    sync.Mutex
	held  bool
	count uint64 // the last ack set aside, 0 if none
}

// set keeps count if the hold is on and says whether it did.
func (h *ackHold) set(count uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return false
	}
	h.count = count
	return true
}

// HoldAcks implements core.AckHolder: the acks pe sends are set aside
// (conn.ack) until the hold ends, which applies the last of them. Replies
// are not held. Nothing happens for this PE, a PE outside the job, or a
// connection that has ended.
func (d *domain) HoldAcks(pe int, hold bool) {
	if pe < 0 || pe >= len(d.conns) || d.conns[pe] == nil {
		return
	}
	c := d.conns[pe]
	h := &c.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if hold {
		h.held = true
		h.on.Store(true)
		return
	}
	h.held = false
	// Applied under the lock: a reader's ack that found the hold on
	// waits for it and, counting more, follows this one.
	if n := h.count; n != 0 {
		h.count = 0
		if err := c.applyAck(n); err != nil {
			c.fail("broke the protocol: " + err.Error())
		}
	}
	h.on.Store(false)
}
