package tcp

import (
	"errors"
	"io"
)

// ackEvery bounds how many operations the reader applies before it acks
// even while more frames are waiting.
const ackEvery = 1024

// readLoop is the connection's progress goroutine (token.go): it applies
// the peer's frames, with the issuers that take the receive token, until
// the stream ends.
func (c *conn) readLoop() {
	defer close(c.readerDone)
	c.read()
}

// endRead ends the stream with the outcome of reading it: nil after the
// peer's BYE and half-close, or the error that broke it. The receive
// token is held; the stream ends once.
func (c *conn) endRead(err error) {
	c.rd.end = true
	switch {
	case err == nil:
		// The peer's BYE, then its half-close: ours may still be due.
		c.stop("it closed its connection")
	case errors.Is(err, errFrame):
		c.d.log.Warn("tcp: dropping the connection of a PE that broke the protocol",
			"peer", c.peer, "addr", c.nc.RemoteAddr().String(), "err", err)
		c.fail("broke the protocol: " + err.Error())
	default:
		c.fail(lostReason(c.d, err))
	}
}

// serve applies the peer's frames while the socket has them, for the
// holder of the receive token: it returns at a frame's boundary once the
// socket is found empty, once done (if not nil) says its holder's wait is
// over, or when the stream ended. got says whether it applied a frame.
// A frame begun is always finished, waiting for its bytes if need be, so
// the next holder starts at a boundary with nothing buffered.
func (c *conn) serve(done func() bool) (got bool) {
	r := &c.rd
	for !r.end {
		idle := r.in.Buffered() == 0
		if n, ok := r.rx.ackDue(idle); ok {
			c.answer(&header{op: opAck, off: n}, nil, nil)
		}
		if r.dirty && (idle || r.frames-r.flushed >= ackEvery) {
			r.flushed = r.frames
			c.flushReader()
		}
		if idle {
			if done != nil && done() {
				return got
			}
			if r.lazy && got {
				// The reader goroutine parks next, and its look
				// before parking is the look for more: a read here
				// would find the socket empty twice.
				return got
			}
			r.sock.edge = true
			_, err := r.in.Peek(1)
			r.sock.edge = false
			if err == errEmpty {
				return got
			}
			if err != nil {
				c.endStream(err)
				return got
			}
		}
		r.frames++
		got = true
		err := r.rx.frame(&r.in, &r.hb, &r.out)
		if o := &r.out; err == nil && (o.woke || o.reply.op != 0 || o.acked) {
			err = c.act(o)
		}
		if err != nil {
			c.endStream(err)
		}
	}
	return got
}

// endStream ends the stream on err from reading a frame: the end of the
// stream after the peer's BYE is its clean close.
func (c *conn) endStream(err error) {
	if err == io.EOF && c.rd.rx.byeSeen {
		err = nil
	}
	c.endRead(err)
}

// act does what a frame the protocol's state machine handled asks of the
// connection: it queues the reply, takes the ack, and lets the woken run
// before the reader polls again.
func (c *conn) act(o *rxOut) error {
	if o.woke {
		c.rd.sock.readied = true
	}
	switch {
	case o.gather != nil:
		if c.q.answerGather(&o.reply, o.gather, &o.blk) {
			c.rd.dirty = true
		}
	case o.reply.op != 0:
		c.answer(&o.reply, o.data, o.ref)
	}
	if o.acked {
		return c.ack(o.ack)
	}
	return nil
}

// ack completes the operations the peer says it has applied, count in all.
// Counters are completed outside the send queue's lock, a few runs at a
// time.
func (c *conn) ack(count uint64) error {
	if c.hold.on.Load() && c.hold.set(count) {
		return nil
	}
	return c.applyAck(count)
}

// applyAck is ack's work: the ledger's record, then the counters.
func (c *conn) applyAck(count uint64) error {
	if err := c.q.ack(count); err != nil {
		return err
	}
	var done [8]batch
	for {
		nd := c.q.popAcked(count, done[:])
		for _, b := range done[:nd] {
			b.ep.complete(b.seq, b.n)
		}
		if nd < len(done) {
			return nil
		}
	}
}
