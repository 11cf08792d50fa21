package tcp

import (
	"encoding/binary"
	"io"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// rxState is the receiving half of the protocol apart from the socket:
// what the peer's frames do to this PE's memory and requests, and what
// they ask the connection to send back (rxOut). It reads a frame's bytes
// from any io.Reader, so it is tested on byte slices; the connection
// feeds it the socket (progress.go). Only the holder of the receive token
// uses it.
type rxState struct {
	d    *domain       // its regions and waiters; nothing else
	reqs *requestTable // this PE's requests, which the peer's replies end
	peer int

	applied uint64 // non-fetching operations of the peer applied here
	ackSent uint64 // applied, as last acknowledged
	byeSeen bool
}

// rxOut is what one frame asks of its connection. data and ref mean
// something only with a reply.
type rxOut struct {
	// reply, when its op is opReply, is a frame to send back, with its
	// payload copied (data) or written from where it lies (ref: a large
	// reply, from this PE's memory).
	reply header
	data  []byte
	ref   []byte
	val   [8]byte // the payload of a value's reply, which data holds
	// gather, when set, is a blocked get's reply: its payload is the
	// blocks of h's shape gathered from gather, the blocks' span.
	gather []byte
	blk    header
	// acked says the frame is an ack: the peer applied ack of this PE's
	// non-fetching operations in all.
	acked bool
	ack   uint64
	// woke says a goroutine of this process may have been woken: an
	// issuer by its reply or ack, a waiter by its memory.
	woke bool
}

// clear empties o for the next frame: what handle sets with a reply
// (data and ref) it sets whole, so a reply's op, the ack and woke are all
// there is to clear, which saves clearing the whole struct every frame.
func (o *rxOut) clear() { o.reply.op, o.acked, o.woke, o.gather = 0, false, false, nil }

// ackDue says whether to acknowledge the peer's operations now, and how
// many in all: when some applied are unacknowledged and the socket is
// drained (idle), or ackEvery have been applied since the last ack.
func (s *rxState) ackDue(idle bool) (uint64, bool) {
	if s.applied != s.ackSent && (idle || s.applied-s.ackSent >= ackEvery) {
		s.ackSent = s.applied
		return s.applied, true
	}
	return 0, false
}

// frame reads one frame from r, its header into hb, and handles it; o is
// cleared first. A frame that breaks the protocol returns an errFrame
// error, one cut short the reader's error.
func (s *rxState) frame(r io.Reader, hb *[maxHdrLen]byte, o *rxOut) error {
	o.clear()
	if _, err := io.ReadFull(r, hb[:hdrLen]); err != nil {
		return err
	}
	if s.byeSeen {
		return frameErr("%s after bye", opName(hb[0]))
	}
	h, err := decodeHeader(hb[:hdrLen])
	if err != nil {
		return err
	}
	if n := extLen(h.op); n > 0 {
		if _, err := io.ReadFull(r, hb[hdrLen:hdrLen+n]); err != nil {
			return err
		}
		if err := decodeExt(&h, hb[hdrLen:hdrLen+n]); err != nil {
			return err
		}
	}
	return s.handle(&h, r, o)
}

// handle executes the frame whose decoded header is h; its payload, if
// it has one, is what r holds next, and is read straight to where it
// goes (a put's region, a reply's request). What the frame asks of the
// connection is added to o.
func (s *rxState) handle(h *header, r io.Reader, o *rxOut) error {
	d := s.d
	switch h.op {
	case opPut:
		b, err := d.target(h, h.arg, 1)
		if err != nil {
			return err
		}
		if err := readPayload(r, b); err != nil {
			return err
		}
		s.notify(h.region, h.off, h.arg, o)
		s.applied++
	case opPutValue:
		b, err := d.target(h, uint64(h.typ), 1)
		if err != nil {
			return err
		}
		mem.StoreValue(b, 0, h.arg, int(h.typ))
		s.notify(h.region, h.off, uint64(h.typ), o)
		s.applied++
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
			s.notify(h.region, h.off, w, o)
		}
		if h.op == opAtomic {
			s.applied++
		} else {
			o.replyValue(h.id, old)
		}
	case opGet:
		b, err := d.target(h, h.arg, 1)
		if err != nil {
			return err
		}
		o.reply = header{op: opReply, off: h.id, arg: h.arg}
		if len(b) > smallReply {
			o.data, o.ref = nil, b
		} else {
			o.data, o.ref = b, nil
		}
	case opPutBlocks:
		b, err := s.blocksTarget(h)
		if err != nil {
			return err
		}
		if err := scatter(r, b, h); err != nil {
			return err
		}
		s.notify(h.region, h.off, uint64(len(b)), o)
		s.applied++
	case opGetBlocks:
		b, err := s.blocksTarget(h)
		if err != nil {
			return err
		}
		o.reply = header{op: opReply, off: h.id, arg: h.arg}
		o.data, o.ref = nil, nil
		o.gather, o.blk = b, *h
	case opGetValue:
		b, err := d.target(h, uint64(h.typ), 1)
		if err != nil {
			return err
		}
		o.replyValue(h.id, mem.LoadValue(b, 0, int(h.typ)))
	case opReply:
		o.woke = true
		return s.reply(h.off, h.arg, r)
	case opAck:
		o.woke = true
		o.acked, o.ack = true, h.off
	case opBye:
		s.byeSeen = true
	}
	return nil
}

// blocksTarget is the span of a blocked move's frame in this PE's region.
func (s *rxState) blocksTarget(h *header) ([]byte, error) {
	n, ok := h.blocksSpan()
	if !ok {
		return nil, frameErr("%s of %d blocks of %d bytes at a stride of %d overflows", opName(h.op), h.blocks(), h.bsize, h.str)
	}
	return s.d.target(h, n, 1)
}

// scatter reads a blocked put's payload from r into b, its span at the
// target, block by block: a block that is one element of up to 8 bytes
// is stored with one store, as a PutValue's is, the others read straight
// into place.
func scatter(r io.Reader, b []byte, h *header) error {
	bs, st, n := int(h.bsize), int(h.str), int(h.blocks())
	if bs == int(h.typ) && bs <= 8 {
		var v [8]byte
		for i := range n {
			if err := readPayload(r, v[:bs]); err != nil {
				return err
			}
			mem.StoreValue(b, i*st, mem.LoadValue(v[:], 0, bs), bs)
		}
		return nil
	}
	for i := range n {
		if err := readPayload(r, b[i*st:][:bs]); err != nil {
			return err
		}
	}
	return nil
}

// appendGather appends to q the blocks of h's shape from b, their span,
// packed: what scatter reads, a block of one element of up to 8 bytes
// loaded with one load.
func appendGather(q []byte, b []byte, h *header) []byte {
	bs, st, n := int(h.bsize), int(h.str), int(h.blocks())
	if bs == int(h.typ) && bs <= 8 {
		var v [8]byte
		for i := range n {
			mem.StoreValue(v[:], 0, mem.LoadValue(b, i*st, bs), bs)
			q = append(q, v[:bs]...)
		}
		return q
	}
	for i := range n {
		q = append(q, b[i*st:][:bs]...)
	}
	return q
}

// notify wakes the waiters on what a frame wrote; o records that the
// woken may want to run before the reader's next poll.
func (s *rxState) notify(region uint32, off, n uint64, o *rxOut) {
	if s.d.notify(region, off, n) {
		o.woke = true
	}
}

// replyValue sets o's reply to the 8-byte value v, for request id.
func (o *rxOut) replyValue(id, v uint64) {
	binary.LittleEndian.PutUint64(o.val[:], v)
	o.reply = header{op: opReply, off: id, arg: 8}
	o.data, o.ref = o.val[:], nil
}

// reply reads the payload of the reply to request id, n bytes, from r
// into the request's buffer and ends the request.
func (s *rxState) reply(id, n uint64, r io.Reader) error {
	q := s.reqs.take(id)
	if q == nil {
		return frameErr("reply to request %#x, which is not outstanding", id)
	}
	if n != uint64(q.want()) {
		s.reqs.finish(q, &core.PeerLostError{PE: s.peer, Reason: "broke the protocol"})
		return frameErr("reply of %d bytes to a request of %d", n, q.want())
	}
	if err := q.read(r); err != nil {
		s.reqs.finish(q, &core.PeerLostError{PE: s.peer, Reason: lostReason(s.d, err)})
		return err
	}
	s.reqs.finish(q, nil)
	return nil
}

// payloadReader is a reader that reads a frame's payload straight to
// where it goes (frameReader).
type payloadReader interface {
	readPayload(p []byte) error
}

// readPayload reads all of p, a frame's payload, from r: straight into p
// where r can (payloadReader), else with io.ReadFull.
func readPayload(r io.Reader, p []byte) error {
	if pr, ok := r.(payloadReader); ok {
		return pr.readPayload(p)
	}
	_, err := io.ReadFull(r, p)
	return err
}
