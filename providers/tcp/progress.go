package tcp

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
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
	c.rend = true
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
	hb := c.hb[:]
	for !c.rend {
		idle := c.br.Buffered() == 0
		if c.applied != c.ackSent && (idle || c.applied-c.ackSent >= ackEvery) {
			c.ackSent = c.applied
			c.queue(&header{op: opAck, off: c.applied}, nil, nil)
		}
		if c.dirty && (idle || c.frames-c.flushed >= ackEvery) {
			c.flushed = c.frames
			c.readerFlush()
		}
		if idle {
			if done != nil && done() {
				return got
			}
			c.rd.edge = true
			_, err := c.br.Peek(1)
			c.rd.edge = false
			if err == errEmpty {
				return got
			}
			if err != nil {
				c.endStream(err)
				return got
			}
		}
		c.frames++
		got = true
		if err := c.frame(hb); err != nil {
			c.endStream(err)
		}
	}
	return got
}

// endStream ends the stream on err from reading a frame: the end of the
// stream after the peer's BYE is its clean close.
func (c *conn) endStream(err error) {
	if err == io.EOF && c.byeSeen {
		err = nil
	}
	c.endRead(err)
}

// frame reads and applies one frame.
func (c *conn) frame(hb []byte) error {
	if _, err := io.ReadFull(c.br, hb[:hdrLen]); err != nil {
		return err
	}
	if c.byeSeen {
		return frameErr("%s after bye", opName(hb[0]))
	}
	h, err := decodeHeader(hb[:hdrLen])
	if err != nil {
		return err
	}
	if isRequest(h.op) {
		if _, err := io.ReadFull(c.br, hb[hdrLen:maxHdrLen]); err != nil {
			return err
		}
		if err := decodeExt(&h, hb[hdrLen:maxHdrLen]); err != nil {
			return err
		}
	}
	return c.apply(&h)
}

// apply executes one frame whose header has been read.
func (c *conn) apply(h *header) error {
	d := c.d
	switch h.op {
	case opPut:
		b, err := d.target(h, h.arg, 1)
		if err != nil {
			return err
		}
		if _, err := io.ReadFull(c.br, b); err != nil {
			return err
		}
		c.notify(h.region, h.off, h.arg)
		c.applied++
	case opPutValue:
		b, err := d.target(h, uint64(h.typ), 1)
		if err != nil {
			return err
		}
		mem.StoreValue(b, 0, h.arg, int(h.typ))
		c.notify(h.region, h.off, uint64(h.typ))
		c.applied++
	case opAtomic, opFetch:
		t := core.AtomicType(h.typ)
		w := uint64(t.Size())
		b, err := d.target(h, w, w)
		if err != nil {
			return err
		}
		op := core.AtomicOp(h.aop)
		old := mem.Atomic(b, 0, op, t, h.arg, h.cmp)
		if op != core.AtomicRead {
			c.notify(h.region, h.off, w)
		}
		if h.op == opAtomic {
			c.applied++
		} else {
			c.replyValue(h.id, old)
		}
	case opGet:
		b, err := d.target(h, h.arg, 1)
		if err != nil {
			return err
		}
		rh := header{op: opReply, off: h.id, arg: h.arg}
		if len(b) > smallReply {
			c.queue(&rh, nil, b)
		} else {
			c.queue(&rh, b, nil)
		}
	case opGetValue:
		b, err := d.target(h, uint64(h.typ), 1)
		if err != nil {
			return err
		}
		c.replyValue(h.id, mem.LoadValue(b, 0, int(h.typ)))
	case opReply:
		c.rd.readied = true
		return c.reply(h.off, h.arg)
	case opAck:
		c.rd.readied = true
		return c.ack(h.off)
	case opBye:
		c.byeSeen = true
	}
	return nil
}

// notify wakes the waiters on what a frame wrote, and lets them run
// before the reader's next poll.
func (c *conn) notify(region uint32, off, n uint64) {
	if c.d.notify(region, off, n) {
		c.rd.readied = true
	}
}

func (c *conn) replyValue(id, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	c.queue(&header{op: opReply, off: id, arg: 8}, b[:], nil)
}

// reply reads the payload of the reply to request id into its buffer.
func (c *conn) reply(id, n uint64) error {
	r := c.take(id)
	if r == nil {
		return frameErr("reply to request %#x, which is not outstanding", id)
	}
	if n != uint64(len(r.dst)) {
		c.finish(r, &core.PeerLostError{PE: c.peer, Reason: "broke the protocol"})
		return frameErr("reply of %d bytes to a request of %d", n, len(r.dst))
	}
	if _, err := io.ReadFull(c.br, r.dst); err != nil {
		c.finish(r, &core.PeerLostError{PE: c.peer, Reason: lostReason(c.d, err)})
		return err
	}
	c.finish(r, nil)
	return nil
}

// ack completes the operations the peer says it has applied, count in all.
// Counters are completed outside bmu, a few runs at a time.
func (c *conn) ack(count uint64) error {
	c.bmu.Lock()
	if count <= c.acked || count > c.sent {
		sent, acked := c.sent, c.acked
		c.bmu.Unlock()
		return frameErr("ack of %d operations when %d were sent and %d acked", count, sent, acked)
	}
	c.acked = count
	c.bmu.Unlock()
	for {
		var done [8]batch
		nd := 0
		c.bmu.Lock()
		for c.bhead < len(c.batches) && nd < len(done) {
			b := &c.batches[c.bhead]
			first := b.end - b.n + 1
			if first > count {
				break
			}
			k := min(b.end, count) - first + 1
			done[nd] = batch{ep: b.ep, n: k, seq: b.seq}
			nd++
			if b.n, b.seq = b.n-k, b.seq+k; b.n > 0 {
				break
			}
			c.bhead++
		}
		if c.bhead == len(c.batches) {
			c.batches, c.bhead = c.batches[:0], 0
		}
		c.bmu.Unlock()
		for _, b := range done[:nd] {
			b.ep.complete(b.seq, b.n)
		}
		if nd < len(done) {
			return nil
		}
	}
}
