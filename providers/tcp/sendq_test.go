package tcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// The send queue and its ack ledger, without a connection or socket.

func newQueue() *sendQueue {
	return &sendQueue{kick: make(chan struct{}, 1), buffer: 1 << 10}
}

// TestLedger numbers operations of two endpoints and completes them by
// acks: runs of one endpoint's consecutive numbers are joined, an ack
// completes the runs it covers in part or whole, and acks that cannot be
// are protocol errors.
func TestLedger(t *testing.T) {
	a, b := &endpoint{}, &endpoint{}
	var l ackLedger
	l.count(a, 1)
	l.count(a, 2)
	l.count(b, 1)
	l.count(a, 3)
	l.count(a, 5) // a's 4 went elsewhere: a new run
	require.Equal(t, []batch{
		{ep: a, end: 2, n: 2, seq: 1}, {ep: b, end: 3, n: 1, seq: 1},
		{ep: a, end: 4, n: 1, seq: 3}, {ep: a, end: 5, n: 1, seq: 5},
	}, l.batches)

	for _, c := range []struct {
		count uint64
		ok    bool
	}{{0, false}, {6, false}, {1, true}, {1, false}, {3, true}, {2, false}, {5, true}, {6, false}} {
		err := l.ack(c.count)
		if c.ok {
			require.NoError(t, err, "ack of %d", c.count)
			continue
		}
		require.ErrorIs(t, err, errFrame, "ack of %d", c.count)
		require.ErrorContains(t, err, "were sent")
	}

	var l2 ackLedger
	for i := range 5 {
		l2.count(a, uint64(i+1))
	}
	l2.count(b, 1)
	done := make([]batch, 8)
	require.Equal(t, 1, l2.pop(3, done), "part of a run")
	require.Equal(t, batch{ep: a, n: 3, seq: 1}, done[0])
	require.Equal(t, 2, l2.pop(6, done), "the rest of it, and the next")
	require.Equal(t, []batch{{ep: a, n: 2, seq: 4}, {ep: b, n: 1, seq: 1}}, done[:2])
	require.Empty(t, l2.batches, "all acknowledged")
	require.Zero(t, l2.pop(6, done))

	// More runs than done holds come out in turns.
	var l3 ackLedger
	for i := range 10 {
		l3.count([]*endpoint{a, b}[i%2], uint64(i/2+1))
	}
	require.Equal(t, 2, len(l3.drain()[:2]))
	require.Empty(t, l3.batches)
	for i := range 10 {
		l3.count([]*endpoint{a, b}[i%2], uint64(i/2+1))
	}
	require.Equal(t, len(done), l3.pop(20, done))
	require.Equal(t, 2, l3.pop(20, done))
}

// TestSendQueuePutSignal queues a put with its signal: both frames, the
// signal right after the put's payload (by reference too), numbered as two
// operations, and the write decided as for the put alone.
func TestSendQueuePutSignal(t *testing.T) {
	q := newQueue()
	ep := &endpoint{}
	small := []byte("12345678")
	sig := header{op: opAtomic, typ: byte(core.Uint64), aop: byte(core.AtomicWrite), off: 64, arg: 7}
	wait, how, err := q.put(ep, &header{op: opPut, arg: 8}, small, &sig, false)
	require.NoError(t, err)
	require.Equal(t, writeTry, how, "a put-signal that starts no burst is its issuer's to write")
	require.Zero(t, wait)
	require.Equal(t, uint64(2), ep.counter.Issued(), "the put and the signal")
	require.Len(t, q.kick, 0, "no writer woken")
	b, ok := q.take(nil, nil)
	require.True(t, ok)
	require.Equal(t, uint64(2), b.end)
	require.Equal(t, appendHeader(append(appendHeader(nil, &header{op: opPut, arg: 8}), small...), &sig), b.out)
	got, err := decodeHeader(b.out[hdrLen+len(small):])
	require.NoError(t, err)
	require.Equal(t, sig, got)

	big := make([]byte, injectSize+1)
	wait, how, err = q.put(ep, &header{op: opPut, arg: uint64(len(big))}, big, &sig, false)
	require.NoError(t, err)
	require.Equal(t, writeNow, how)
	require.Equal(t, uint64(3), wait, "the put's frame, not the signal's, is waited for")
	b, ok = q.take(nil, nil)
	require.True(t, ok)
	require.Equal(t, uint64(4), b.end)
	require.Equal(t, []segment{{at: hdrLen, ref: big}}, b.refs, "the payload between the put's header and the signal")
	require.Len(t, b.out, 2*hdrLen)
}

// TestSendQueue queues puts, requests and answers and takes them as a
// writer does: a lone put is the issuer's to write, a burst the writer's,
// a large put by reference and a full queue are written at once; what
// the reader's non-blocking write cannot take stays; a failed or closed
// queue refuses everything.
func TestSendQueue(t *testing.T) {
	q := newQueue()
	ep := &endpoint{}
	small := []byte("12345678")

	wait, how, err := q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
	require.NoError(t, err)
	require.Equal(t, writeTry, how, "a put that starts no burst")
	require.Zero(t, wait)
	q.lastSend = nanotime() + int64(time.Hour) // the next put follows within burstGap
	_, how, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
	require.NoError(t, err)
	require.Equal(t, leaveIt, how, "a put within a burst")
	require.Len(t, q.kick, 1, "the writer was woken")
	require.Equal(t, uint64(2), ep.counter.Issued(), "both numbered once queued")

	big := make([]byte, injectSize+1)
	wait, how, err = q.put(ep, &header{op: opPut, arg: uint64(len(big))}, big, nil, false)
	require.NoError(t, err)
	require.Equal(t, writeNow, how)
	require.Equal(t, uint64(3), wait, "the large put waits for its frame to be written")

	_, ok := q.takeNoWait(nil, nil, injectSize)
	require.False(t, ok, "a payload by reference past the reader's limit is the writer goroutine's")
	b, ok := q.takeNoWait(nil, nil, len(big))
	require.True(t, ok, "one within it is the reader's")

	q.putBack(b.out, b.refs)
	b, ok = q.take(nil, nil)
	require.True(t, ok)
	require.Equal(t, uint64(3), b.end)
	require.Len(t, b.out, 3*hdrLen+2*len(small))
	require.Equal(t, []segment{{at: 3*hdrLen + 2*len(small), ref: big}}, b.refs)
	_, ok = q.take(nil, nil)
	require.False(t, ok, "empty")
	require.False(t, q.kicked, "a writer that found the queue empty sleeps")

	// The reader's answers, written in part: the rest goes back in front.
	require.True(t, q.answer(&header{op: opAck, off: 2}, nil, nil))
	b, ok = q.takeNoWait(nil, nil, 0)
	require.True(t, ok)
	require.Equal(t, uint64(4), b.end)
	out := b.out
	require.True(t, q.answer(&header{op: opAck, off: 3}, nil, nil))
	q.putBack(out[5:], nil)
	require.Equal(t, append(append([]byte(nil), out[5:]...), appendHeader(nil, &header{op: opAck, off: 3})...), q.out)

	// A full queue is written by its issuer.
	for len(q.out) < q.buffer-hdrLen-len(small) {
		_, _, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
		require.NoError(t, err)
	}
	_, how, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
	require.NoError(t, err)
	require.Equal(t, writeNow, how)

	// The bye is the last frame; after it nothing is queued.
	q.queueBye()
	require.False(t, q.drained(), "the bye is not written yet")
	_, ok = q.takeNoWait(nil, nil, 1<<30)
	require.False(t, ok, "the bye is the writer goroutine's")
	b, ok = q.take(nil, nil)
	require.True(t, ok)
	require.True(t, b.bye)
	require.True(t, q.drained())
	_, _, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
	require.ErrorIs(t, err, core.ErrClosed)
	require.False(t, q.answer(&header{op: opAck, off: 4}, nil, nil))

	// A failed queue refuses with its error and hands back what was not
	// acknowledged.
	q = newQueue()
	for range 3 {
		_, _, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
		require.NoError(t, err)
	}
	require.NoError(t, q.ack(1))
	var done [8]batch
	require.Equal(t, 1, q.popAcked(1, done[:]))
	lost := &core.PeerLostError{PE: 1, Reason: "test"}
	pending := q.fail(lost)
	require.Len(t, pending, 1)
	require.Equal(t, uint64(2), pending[0].n)
	require.ErrorIs(t, q.request(&header{op: opGet}, false), core.ErrPeerLost)
	_, _, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
	require.ErrorIs(t, err, core.ErrPeerLost)
}

// TestRequestTable: ids are unique across reuse of a slot, a reply's id
// takes its request once, and a failed table ends every request it holds
// and refuses new ones.
func TestRequestTable(t *testing.T) {
	tab := &requestTable{peer: 1}
	r1, err := tab.add(make([]byte, 4), nil, false)
	require.NoError(t, err)
	require.Same(t, r1, tab.take(r1.id))
	require.Nil(t, tab.take(r1.id), "taken once")
	old := r1.id
	tab.release(r1)
	r2, err := tab.add(nil, nil, false)
	require.NoError(t, err)
	require.NotEqual(t, old, r2.id, "a reused slot has a new id")
	require.Nil(t, tab.take(old), "a stale id")
	require.Len(t, r2.dst, 8, "a value request")
	r3, err := tab.add(make([]byte, 2), nil, false)
	require.NoError(t, err)
	require.Equal(t, 2, tab.outstanding())

	lost := &core.PeerLostError{PE: 1, Reason: "test"}
	ended := tab.fail(lost)
	require.ElementsMatch(t, []*request{r2, r3}, ended)
	require.Zero(t, tab.outstanding())
	_, err = tab.add(nil, nil, false)
	require.ErrorIs(t, err, core.ErrPeerLost)
	for _, r := range ended {
		tab.finish(r, lost)
		require.Len(t, r.ch, 1)
		require.ErrorIs(t, r.err, core.ErrPeerLost)
	}
}

// TestBurstGapCountsFromTheWrite: where the issuer's own write of a lone
// put takes longer than burstGap (a slow kernel), the gap the next put is
// measured by starts when that write ends, not when the put was queued;
// else every put of a stream would be written alone, a system call each.
func TestBurstGapCountsFromTheWrite(t *testing.T) {
	q := newQueue()
	ep := &endpoint{}
	_, how, err := q.put(ep, &header{op: opPut, arg: 8}, []byte("12345678"), nil, false)
	require.NoError(t, err)
	require.Equal(t, writeTry, how, "a put that starts no burst")
	q.lastSend -= 10 * burstGap // its issuer's write took ten gaps
	before := nanotime()
	q.wroteAlone()
	require.GreaterOrEqual(t, q.lastSend, before, "the gap counts from the end of the write")
	later := before + int64(time.Hour) // a put queued meanwhile, as far as the queue can tell
	q.lastSend = later
	q.wroteAlone()
	require.Equal(t, later, q.lastSend, "a later put's time is kept")
}

// TestRestAfter checks what is left of a write of copied frames with
// payloads by reference inserted, cut at every byte.
func TestRestAfter(t *testing.T) {
	buf := []byte("abcdefgh")
	refs := []segment{{at: 2, ref: []byte("XYZ")}, {at: 2, ref: []byte("Q")}, {at: 8, ref: []byte("RS")}}
	stream := "abXYZQcdefghRS"
	for n := 0; n <= len(stream); n++ {
		// restAfter compacts its arguments in place: give it copies.
		rest, restRefs := restAfter(append([]byte(nil), buf...), append([]segment(nil), refs...), n)
		// Put the rest together as the writer would (setPieces).
		var got []byte
		prev := 0
		for _, s := range restRefs {
			got = append(append(got, rest[prev:s.at]...), s.ref...)
			prev = s.at
		}
		got = append(got, rest[prev:]...)
		require.Equal(t, stream[n:], string(got), "cut at %d", n)
		for _, s := range restRefs {
			require.NotEmpty(t, s.ref, "cut at %d: no empty reference is left", n)
		}
	}
}

// TestTakeNoWaitStream checks that the reader leaves two large replies,
// a stream, to the writer goroutine, and takes one.
func TestTakeNoWaitStream(t *testing.T) {
	q := newQueue()
	big := make([]byte, injectSize+1)
	require.True(t, q.answer(&header{op: opReply, off: 1, arg: uint64(len(big))}, nil, big))
	b, ok := q.takeNoWait(nil, nil, len(big))
	require.True(t, ok, "one large reply is the reader's")
	q.putBack(b.out, b.refs)
	require.True(t, q.answer(&header{op: opReply, off: 2, arg: uint64(len(big))}, nil, big))
	_, ok = q.takeNoWait(nil, nil, len(big))
	require.False(t, ok, "two are a stream, the writer goroutine's")
	require.Len(t, q.kick, 1, "the writer was woken")
}

// In a batch a lone small put is not its issuer's to write: it is queued,
// the writer kicked to write it within batchHold; more of the batch add
// to it without a kick. An operation outside the batch urges the writer
// on, and so does a request; a full queue is its issuer's to write still.
// Taking the queue ends the hold.
func TestSendQueueBatch(t *testing.T) {
	q := newQueue()
	q.urge = make(chan struct{}, 1)
	ep := &endpoint{}
	small := []byte("12345678")

	before := nanotime()
	_, how, err := q.put(ep, &header{op: opPut, arg: 8}, small, nil, true)
	after := nanotime()
	require.NoError(t, err)
	require.Equal(t, leaveIt, how, "a batch's lone put waits for the writer")
	require.Len(t, q.kick, 1, "the writer is kicked to write it")
	require.True(t, q.holding())
	// The hold runs batchHold from the put: read off the clock the put
	// read, not against the time this test takes to get here, which a
	// loaded machine stretches past batchHold.
	q.mu.Lock()
	at := q.heldAt
	q.mu.Unlock()
	require.True(t, before <= at && at <= after, "the hold starts at the put (%d, between %d and %d)", at, before, after)
	require.LessOrEqual(t, q.holdLeft(), batchHold)
	<-q.kick
	_, how, err = q.put(ep, &header{op: opAtomic}, nil, nil, true)
	require.NoError(t, err)
	require.Equal(t, leaveIt, how)
	require.Empty(t, q.kick, "the writer, kicked already, is not kicked again")
	require.Empty(t, q.urge)

	_, _, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, false)
	require.NoError(t, err)
	require.Len(t, q.urge, 1, "an operation outside the batch cannot wait")
	require.False(t, q.holding())
	require.Zero(t, q.holdLeft())
	<-q.urge

	b, ok := q.take(nil, nil)
	require.True(t, ok)
	require.Equal(t, uint64(3), b.end, "the batch leaves in one write with what followed it")
	_, ok = q.take(nil, nil)
	require.False(t, ok, "the writer finds the queue empty and sleeps")
	_, _, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, true)
	require.NoError(t, err)
	require.True(t, q.holding())
	require.NoError(t, q.request(&header{op: opGet, arg: 8}, true))
	require.Len(t, q.urge, 1, "a request cannot wait")
	<-q.urge
	<-q.kick
	q.take(nil, nil)
	q.take(nil, nil)

	for !q.holding() || len(q.out) < q.buffer {
		_, how, err = q.put(ep, &header{op: opPut, arg: 8}, small, nil, true)
		require.NoError(t, err)
		if how == writeNow {
			break
		}
	}
	require.Equal(t, writeNow, how, "a full queue is written by its issuer, in a batch too")
	_, ok = q.take(nil, nil)
	require.True(t, ok)
	require.False(t, q.holding(), "taking the queue ends the hold")
}
