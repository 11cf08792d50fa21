package ntbring

import (
	"encoding/binary"
	"fmt"
	"sync"
)

// What a host does with a transfer addressed to it is the same whatever
// protocol carried it: land a put, read for a get, run an atomic, or
// finish the operation an answer belongs to. A protocol decodes and checks
// the transfer, calls serve or answered, and sends the answer back.

// serve executes request m, whose payload is in payload, and returns the
// answer to send to m.src: its metadata (all but slot and size), its
// payload, and the pooled buffer holding that payload, if any, to return
// to d.bufs once sent. A get's answer is a slice of the region itself. A
// request with a malformed header returns an error wrapping errBadMeta:
// drop it. A request outside this host's regions is answered with a nack.
func (d *domain) serve(m meta, payload []byte) (reply meta, out []byte, buf *[]byte, err error) {
	reply = meta{src: m.dst, dst: m.src, tag: m.tag}
	switch m.kind {
	case kindPut:
		reg := d.regionFor(m.dpe, m.region, int(m.off), int(m.size))
		if reg == nil {
			return d.nack(reply, nackRegion)
		}
		reg.land(int(m.off), payload)
		reply.kind = kindPutAck
	case kindGetReq:
		n, err := decodeGetRequest(payload, d.s.slotSize)
		if err != nil {
			return reply, nil, nil, err
		}
		reg := d.regionFor(m.dpe, m.region, int(m.off), int(n))
		if reg == nil {
			return d.nack(reply, nackRegion)
		}
		// The answer leaves straight from the region: a get reads the
		// owner's memory as it is when the data leaves.
		reply.kind, out = kindGetResp, reg.mem[m.off:m.off+n]
	case kindAmoReq:
		a, err := decodeAmoRequest(payload)
		if err != nil {
			return reply, nil, nil, err
		}
		reg := d.regionFor(m.dpe, m.region, int(m.off), a.typ.Size())
		switch {
		case reg == nil:
			return d.nack(reply, nackRegion)
		case int(m.off)%a.typ.Size() != 0:
			return d.nack(reply, nackAtomic)
		}
		buf = d.bufs.get(8)
		binary.LittleEndian.PutUint64(*buf, reg.atomic(int(m.off), a))
		reply.kind, out = kindAmoResp, *buf
	default:
		return reply, nil, nil, fmt.Errorf("%w: %s is not a request", errBadMeta, m.kind)
	}
	reply.size = uint32(len(out))
	return reply, out, buf, nil
}

func (d *domain) nack(reply meta, r nackReason) (meta, []byte, *[]byte, error) {
	b := d.bufs.get(1)
	(*b)[0] = byte(r)
	reply.kind, reply.size = kindNack, 1
	return reply, *b, b, nil
}

// answered finishes the op a response belongs to. A response whose tag is
// unknown, or that comes from another host than the op's target, is
// dropped: it is stale (its op expired) or garbage.
func (d *domain) answered(m meta, payload []byte) {
	o := d.pending.peek(m.tag)
	if o == nil || d.hostOf(o.pe) != int(m.src) {
		d.dropped(fmt.Errorf("%w: %s from host %d for tag %d, which no operation to that host waits for", errBadMeta, m.kind, m.src, m.tag))
		return
	}
	if m.kind == kindGetResp && len(payload) != len(o.dst) {
		d.dropped(fmt.Errorf("%w: get response of %d bytes for a get of %d", errBadMeta, len(payload), len(o.dst)))
		return
	}
	if d.holds.Load() != 0 && d.holdAnswer(o, m, payload) {
		return // set aside (HoldAcks)
	}
	if m.kind == kindPutAck && o.acks.Add(-1) >= 0 {
		return // more pieces of the put are to land
	}
	if o = d.pending.take(m.tag); o == nil {
		return // expired meanwhile
	}
	var err error
	switch m.kind {
	case kindGetResp:
		copy(o.dst, payload)
	case kindAmoResp:
		o.old = binary.LittleEndian.Uint64(payload)
	case kindNack:
		err = nackReason(payload[0]).err()
	}
	o.finish(err)
}

// bufPool holds buffers for relays and answers: one transfer's largest
// payload, and small ones for the answers of atomics and nacks. An
// atomic's answer of 8 bytes in a slot-sized buffer would cost, whenever
// the pool comes up empty (after every collection; and a quarter of the
// puts are dropped under the race detector), a slot's worth of zeroed
// memory per atomic: at 256K slots that was most of the time a stream of
// atomics took.
type bufPool struct {
	size  int
	pool  sync.Pool
	small sync.Pool
}

// smallBuf is the size of the small buffers: an answer to an atomic or
// a nack.
const smallBuf = 64

// get returns a buffer of n bytes.
func (p *bufPool) get(n int) *[]byte {
	pool, size := &p.pool, p.size
	if n <= smallBuf {
		pool, size = &p.small, smallBuf
	}
	b, _ := pool.Get().(*[]byte)
	if b == nil {
		s := make([]byte, size)
		b = &s
	}
	*b = (*b)[:n]
	return b
}

// put returns b, if not nil, to the pool it came from.
func (p *bufPool) put(b *[]byte) {
	if b == nil {
		return
	}
	*b = (*b)[:cap(*b)]
	if cap(*b) == smallBuf {
		p.small.Put(b)
		return
	}
	p.pool.Put(b)
}
