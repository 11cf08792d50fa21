package tcp

import (
	"sync"

	"github.com/goshmem/goshmem/core"
)

// sendQueue is a connection's outgoing frames: issuers and the reader
// append encoded frames to out; refs are payloads written from where they
// lie (large puts, large replies), each after out[:at]; the writer takes
// the whole queue at once (take). enq counts frames queued: a large put
// waits until the writer's count of frames written reaches its ticket.
// The ledger numbers the non-fetching operations queued, which the peer's
// acks count off.
//
// mu guards everything but kick, and is a leaf: held only inside the
// queue's methods, which call nothing that locks but the endpoint
// counter's atomics.
type sendQueue struct {
	kick   chan struct{} // wakes the writer goroutine
	buffer int           // the queue's size past which issuers write it themselves

	mu     sync.Mutex
	out    []byte
	refs   []segment
	kicked bool // the writer was kicked and has not found the queue empty since
	// held says the writer was kicked for a batch's frames (batch.go):
	// it waits up to batchHold before it writes, unless urged.
	held     bool
	heldAt   int64         // nanotime of the first frame held
	urge     chan struct{} // ends the writer's wait for a batch
	lastSend int64         // nanotime of the last put, or of the end of its issuer's own write
	bye      bool          // opBye is queued: nothing more may be
	err      error         // the connection failed: nothing more may be queued
	enq      uint64
	ledger   ackLedger
}

type segment struct {
	at  int
	ref []byte
}

// how an issuer gets what it queued written.
const (
	leaveIt  = iota // the writer goroutine writes it, or has been woken to
	writeTry        // write it now unless somebody is writing
	writeNow        // write it now, waiting for the writer's turn
)

// closedLocked is why nothing may be queued, nil if something may; mu is
// held.
func (q *sendQueue) closedLocked() error {
	if q.bye {
		return core.ErrClosed
	}
	return q.err
}

// kickLocked wakes the writer unless it is already awake; mu is held.
func (q *sendQueue) kickLocked() {
	if !q.kicked {
		q.kicked = true
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// wake wakes the writer.
func (q *sendQueue) wake() {
	q.mu.Lock()
	q.urgeLocked()
	q.kickLocked()
	q.mu.Unlock()
}

// put queues a non-fetching operation of ep: a header and, for puts up to
// injectSize, the payload copied, else a reference to it. It numbers the
// operation on ep's counter and in the ledger once it is queued: an
// operation that could not be queued was never issued, and one that was
// is completed by its ack or the queue's failure. It says how the issuer
// gets it written and, for a payload by reference, the ticket that the
// count of frames written must reach before the payload may be reused
// (0 otherwise). A signal, if sig is not nil, follows the put in the
// queue, so one write carries both (endpoint.PutSignal).
func (q *sendQueue) put(ep *endpoint, h *header, payload []byte, sig *header, batch bool) (wait uint64, how int, err error) {
	q.mu.Lock()
	if err := q.closedLocked(); err != nil {
		q.mu.Unlock()
		return 0, leaveIt, err
	}
	q.out = appendHeader(q.out, h)
	byRef := len(payload) > injectSize
	if byRef {
		q.refs = append(q.refs, segment{at: len(q.out), ref: payload})
	} else {
		q.out = append(q.out, payload...)
	}
	q.ledger.count(ep, ep.counter.Issue(1))
	q.enq++
	ticket := q.enq
	if sig != nil {
		q.out = appendHeader(q.out, sig)
		q.ledger.count(ep, ep.counter.Issue(1))
		q.enq++
	}
	return q.queuedLocked(ticket, byRef, batch)
}

// putBlocks is put for a blocked put: h's frame, its payload the blocks
// of h's shape gathered from src, stride bytes apart there, copied into
// the queue (maxBlocksFrame bounds them).
func (q *sendQueue) putBlocks(ep *endpoint, h *header, src []byte, stride int, batch bool) (how int, err error) {
	q.mu.Lock()
	if err := q.closedLocked(); err != nil {
		q.mu.Unlock()
		return leaveIt, err
	}
	q.out = appendHeader(q.out, h)
	bs := int(h.bsize)
	for i := range int(h.blocks()) {
		q.out = append(q.out, src[i*stride:][:bs]...)
	}
	q.ledger.count(ep, ep.counter.Issue(1))
	q.enq++
	_, how, err = q.queuedLocked(q.enq, false, batch)
	return how, err
}

// queuedLocked is the end of put, once its frames are queued: it says
// how the issuer gets them written, and unlocks mu. ticket is the put's
// frame's number, byRef says its payload lies where it was.
func (q *sendQueue) queuedLocked(ticket uint64, byRef, batch bool) (wait uint64, how int, err error) {
	full := len(q.out) >= q.buffer
	now := nanotime()
	if batch && !byRef && !full {
		// A batch's frame waits for more (batch.go): no write, and the
		// writer, if it sleeps, is kicked to write within batchHold.
		q.holdLocked(now)
		q.mu.Unlock()
		return 0, leaveIt, nil
	}
	q.urgeLocked()
	// A put that follows the last by more than burstGap while the writer
	// sleeps starts no burst: its issuer writes it, saving the writer's
	// wake-up. Within a burst, the writer combines. The gap counts from the
	// end of the issuer's own write (wroteAlone): where one small write
	// costs more than burstGap, counting from the put would make every put
	// of a stream a burst of one, a system call each.
	alone := !q.kicked && now-q.lastSend > burstGap
	q.lastSend = now
	if !alone {
		q.kickLocked()
	}
	q.mu.Unlock()
	switch {
	case byRef:
		// The issuer would wait for the writer anyway.
		return ticket, writeNow, nil
	case full:
		return 0, writeNow, nil
	case alone:
		return 0, writeTry, nil
	}
	return 0, leaveIt, nil
}

// wroteAlone notes that the issuer of a put that started no burst has
// written it: the next put's gap counts from now.
func (q *sendQueue) wroteAlone() {
	now := nanotime()
	q.mu.Lock()
	q.lastSend = max(q.lastSend, now)
	q.mu.Unlock()
}

// request queues a request, whose h.id is set; a non-blocking one wakes
// the writer, a blocking one's issuer writes it.
func (q *sendQueue) request(h *header, nbi bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.closedLocked(); err != nil {
		return err
	}
	q.out = appendHeader(q.out, h)
	q.enq++
	q.urgeLocked()
	if nbi {
		q.kickLocked()
	}
	return nil
}

// answer queues a frame of the reader's (ack or reply), the payload
// copied, or with ref written from where it lies. It says whether it
// queued it: nothing is after the queue's bye or failure.
func (q *sendQueue) answer(h *header, payload, ref []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bye || q.err != nil {
		return false
	}
	q.out = appendHeader(q.out, h)
	q.out = append(q.out, payload...)
	if ref != nil {
		q.refs = append(q.refs, segment{at: len(q.out), ref: ref})
	}
	q.enq++
	return true
}

// answerGather is answer for a blocked get's reply h, whose payload is
// the blocks of blk's shape gathered from b (appendGather).
func (q *sendQueue) answerGather(h *header, b []byte, blk *header) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bye || q.err != nil {
		return false
	}
	q.out = appendHeader(q.out, h)
	q.out = appendGather(q.out, b, blk)
	q.enq++
	return true
}

// queueBye queues the last frame of a clean close, once.
func (q *sendQueue) queueBye() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bye {
		return
	}
	q.out = appendHeader(q.out, &header{op: opBye})
	q.bye = true
	q.enq++
	q.urgeLocked()
	q.kickLocked()
}

// batchOut is what a writer takes from the queue: frames up to end, and
// whether the bye is among them.
type batchOut struct {
	out  []byte
	refs []segment
	end  uint64
	bye  bool
}

// take hands the writer everything queued, and starts the queue afresh on
// spare and spareRefs, the writer's buffers of its last write. An empty
// queue is left as it is, and the writer counts as asleep (ok false).
func (q *sendQueue) take(spare []byte, spareRefs []segment) (b batchOut, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held, q.heldAt = false, 0
	if len(q.out) == 0 && len(q.refs) == 0 {
		q.kicked = false
		return b, false
	}
	b = batchOut{out: q.out, refs: q.refs, end: q.enq, bye: q.bye}
	q.out, q.refs = spare, spareRefs
	return b, true
}

// takeNoWait is take for the reader's write that never waits
// (writer.flushNoWait): it takes nothing when the queue holds the bye,
// whose half-close is the writer goroutine's, or more than one payload
// by reference or one of more than maxRefs bytes, which the writer
// goroutine writes as a bulk transfer (a window of non-blocking gets'
// replies is a stream, which the reader's writes slowed to about half);
// it wakes the writer goroutine for them.
func (q *sendQueue) takeNoWait(spare []byte, spareRefs []segment, maxRefs int) (b batchOut, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.out) == 0 && len(q.refs) == 0 {
		return b, false
	}
	if q.bye || len(q.refs) > 1 || (len(q.refs) == 1 && len(q.refs[0].ref) > maxRefs) {
		q.urgeLocked()
		q.kickLocked()
		return b, false
	}
	q.held, q.heldAt = false, 0
	b = batchOut{out: q.out, refs: q.refs, end: q.enq}
	q.out, q.refs = spare, spareRefs
	return b, true
}

// putBack puts rest and restRefs, the part of a take that was not
// written (restAfter), back at the head of the queue, in front of what
// was queued meanwhile, and wakes the writer for it. The queue takes
// their storage; it returns the buffers of what was queued meanwhile,
// emptied, as spares for the caller.
func (q *sendQueue) putBack(rest []byte, restRefs []segment) (spare []byte, spareRefs []segment) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(rest)
	for i := range q.refs {
		q.refs[i].at += n
	}
	spare, spareRefs = q.out[:0], q.refs[:0]
	q.out = append(rest, q.out...)
	q.refs = append(restRefs, q.refs...)
	clear(spareRefs[:cap(spareRefs)])
	q.kickLocked()
	return spare, spareRefs
}

// restAfter is what is left of buf with the payloads refs inserted
// (segment) once its first n bytes are written: the copied bytes left,
// and the references left, placed in them. It compacts both in place, in
// buf's and refs' storage. The references' payloads are not copied: they
// stay where they lie.
func restAfter(buf []byte, refs []segment, n int) (rest []byte, restRefs []segment) {
	pos, prev := 0, 0 // how far into the stream, and into buf
	rest, restRefs = buf[:0], refs[:0]
	for _, s := range refs {
		rest = appendPast(rest, buf[prev:s.at], &pos, n)
		if l := len(s.ref); pos+l > n {
			restRefs = append(restRefs, segment{at: len(rest), ref: s.ref[max(0, n-pos):]})
		}
		pos += len(s.ref)
		prev = s.at
	}
	rest = appendPast(rest, buf[prev:], &pos, n)
	clear(refs[len(restRefs):])
	return rest, restRefs
}

// appendPast appends to rest what of p, which starts *pos bytes into a
// stream, lies past its first n bytes, and moves *pos past p.
func appendPast(rest, p []byte, pos *int, n int) []byte {
	skip := min(max(0, n-*pos), len(p))
	*pos += len(p)
	if skip == len(p) {
		return rest
	}
	return append(rest, p[skip:]...)
}

// pending says whether anything is queued.
func (q *sendQueue) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.out) > 0 || len(q.refs) > 0
}

// full says whether half a buffer or more, a payload by reference or the
// bye is queued: enough for the lingering writer to write now.
func (q *sendQueue) full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.out) >= q.buffer/2 || len(q.refs) > 0 || q.bye
}

// drained says whether the bye has been queued and everything written.
func (q *sendQueue) drained() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bye && len(q.out) == 0 && len(q.refs) == 0
}

// fail refuses everything later with err and returns the operations
// queued but not acknowledged, for the caller to fail.
func (q *sendQueue) fail(err error) []batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.err = err
	return q.ledger.drain()
}

// ack records the peer's ack of count operations in all, or returns the
// protocol error of an ack that cannot be.
func (q *sendQueue) ack(count uint64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ledger.ack(count)
}

// lastOf is the number on the connection of ep's last operation queued
// and not yet acknowledged, 0 if none is: what a per-PE quiet waits for
// the peer's acks to reach (endpoint.QuietPEs). The peer acks in the
// order operations were queued, so every earlier one of ep's is acked
// by then.
func (q *sendQueue) lastOf(ep *endpoint) uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := &q.ledger
	for i := len(l.batches) - 1; i >= l.head; i-- {
		if l.batches[i].ep == ep {
			return l.batches[i].end
		}
	}
	return 0
}

// ackedThrough says whether the peer acknowledged every operation
// numbered up to mark, or the queue failed, which ends them all.
func (q *sendQueue) ackedThrough(mark uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ledger.acked >= mark || q.err != nil
}

// popAcked fills done with up to len(done) runs of acknowledged
// operations, up to count, and says how many.
func (q *sendQueue) popAcked(count uint64, done []batch) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ledger.pop(count, done)
}

// batch is a run of non-fetching operations queued by one endpoint: the
// ones numbered up to end on the connection, n of them still
// unacknowledged, which are numbered seq to seq+n-1 on the endpoint's
// counter.
type batch struct {
	ep  *endpoint
	end uint64
	n   uint64
	seq uint64
}

// ackLedger numbers the non-fetching operations sent on a connection and
// matches the peer's acks to the endpoints that issued them. It is plain
// state: its owner (sendQueue) guards it.
type ackLedger struct {
	sent    uint64 // operations sent
	acked   uint64 // operations the peer said it applied
	batches []batch
	head    int // batches[:head] are acknowledged
}

// count numbers an operation of ep, numbered seq on ep's counter. It joins
// the last batch if that is ep's and holds ep's operation numbered just
// before: an ack then completes a run of numbers.
func (l *ackLedger) count(ep *endpoint, seq uint64) {
	l.sent++
	if n := len(l.batches); n > l.head {
		if b := &l.batches[n-1]; b.ep == ep && b.seq+b.n == seq {
			b.end, b.n = l.sent, b.n+1
			return
		}
	}
	l.batches = append(l.batches, batch{ep: ep, end: l.sent, n: 1, seq: seq})
}

// ack records that the peer applied count operations in all: more than
// it said before, and no more than were sent.
func (l *ackLedger) ack(count uint64) error {
	if count <= l.acked || count > l.sent {
		return frameErr("ack of %d operations when %d were sent and %d acked", count, l.sent, l.acked)
	}
	l.acked = count
	return nil
}

// pop removes the acknowledged operations numbered up to count, in up to
// len(done) runs of one endpoint's numbers each, into done, and says how
// many runs. Fewer than len(done) means none up to count is left.
func (l *ackLedger) pop(count uint64, done []batch) int {
	nd := 0
	for l.head < len(l.batches) && nd < len(done) {
		b := &l.batches[l.head]
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
		l.head++
	}
	if l.head == len(l.batches) {
		l.batches, l.head = l.batches[:0], 0
	}
	return nd
}

// drain removes and returns every unacknowledged run.
func (l *ackLedger) drain() []batch {
	pending := l.batches[l.head:]
	l.batches, l.head = nil, 0
	return pending
}
