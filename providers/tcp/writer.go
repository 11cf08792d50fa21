package tcp

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// writer writes a connection's send queue to its socket. mu is held by
// whoever writes: the writer goroutine, an issuer that writes its own
// frames, or the reader's write that never waits. Holding it, a writer
// takes the queue (whose lock is a leaf) and writes what it took, so
// frames leave in the order they were queued.
type writer struct {
	nc net.Conn
	// written is the count of frames queued (sendQueue.enq) up to the
	// last frame written.
	written atomic.Uint64
	// writes counts the writes of taken queues: the system calls the
	// frames cost, but for a write the socket took in parts.
	writes atomic.Uint64

	mu        sync.Mutex
	spare     []byte    // the buffer of the last write, for the next take
	spareRefs []segment // its references, likewise
	pieces    [][]byte  // the last write's buffer with its payloads by reference inserted (setPieces)
	bufs      net.Buffers

	// The writes that never block (flushNoWait): the socket, and the
	// buffer and result of the write under way, with a method value made
	// once so that a write allocates nothing. The issuers' small writes
	// (writeAll, rawAll) share them: they wait for room in the runtime's
	// poller as nc's writes do, but write with raw system calls.
	raw      syscall.RawConn // nil where nc is not a socket
	rawWrite func(fd uintptr) bool
	rawAll   func(fd uintptr) bool
	rbuf     []byte
	rn       int
	rerr     error

	// issuerPolls says that issuers' writes wait for socket space in
	// poll(2) on their own thread (writePolling) rather than parking in
	// the runtime's poller: the domain's callers are goroutines locked to
	// their threads (core.Config.LockedCallers), a C program's, whose
	// every park and wake-up hands the runtime processor to another
	// thread and back. rawPoll is writePolling's method value, made once;
	// vecs and pv/po its I/O vectors and how far into pieces it has written.
	issuerPolls bool
	rawPoll     func(fd uintptr) bool
	// rawVec writes pieces with writev(2) where the socket is outside the
	// runtime's poller (sock), whose vectored writes the net package's
	// Buffers cannot reach; nil elsewhere.
	rawVec func(fd uintptr) bool
	pv, po int
	vecs   []syscall.Iovec
	// rawVecNoWait writes pieces with writev(2) without ever waiting,
	// for flushNoWait, counting what it wrote in vn; nil where the
	// system has no writev.
	rawVecNoWait func(fd uintptr) bool
	vn           int
	vraw         bool // writev's calls are raw (writeVectorsNoWait)
	vlen         int  // the bytes writeVectorsNoWait is to write
}

// readerRefs is the largest reply the reader writes by reference itself
// (flushNoWait), one at a time: a larger one is a bulk transfer, which
// the writer goroutine writes, waiting for room as it goes.
const readerRefs = 256 << 10

// flushLocked writes everything queued in q until it finds q empty, and
// half-closes the socket after the bye. mu is held. It returns the error
// that broke the socket.
func (w *writer) flushLocked(q *sendQueue, polls bool) error {
	for {
		b, ok := q.take(w.spare[:0], w.spareRefs[:0])
		if !ok {
			return nil
		}
		err := w.write(b.out, b.refs, polls)
		clear(b.refs) // drop the references to callers' buffers
		w.spare, w.spareRefs = b.out[:0], b.refs[:0]
		if err != nil {
			return err
		}
		w.written.Store(b.end)
		if b.bye {
			if hc, ok := w.nc.(interface{ CloseWrite() error }); ok {
				_ = hc.CloseWrite()
			}
		}
	}
}

// write writes buf with the payloads refs inserted where they belong,
// waiting for socket space in poll(2) on this thread if polls and the
// socket allows.
func (w *writer) write(buf []byte, refs []segment, polls bool) error {
	w.writes.Add(1)
	if polls && w.raw != nil && w.rawPoll != nil {
		return w.writeByPolling(buf, refs, w.rawPoll)
	}
	if len(refs) == 0 {
		if w.rawAll != nil && len(buf) <= rawBulk {
			return w.writeWaiting(buf)
		}
		_, err := w.nc.Write(buf)
		return err
	}
	if w.rawVec != nil {
		return w.writeByPolling(buf, refs, w.rawVec)
	}
	w.setPieces(buf, refs)
	// WriteTo consumes w.bufs; being a field, it costs no allocation.
	w.bufs = w.pieces
	_, err := w.bufs.WriteTo(w.nc)
	clear(w.pieces)
	return err
}

// writeWaiting writes buf with raw system calls, waiting for room in the
// runtime's poller while the socket is full (writeAll). mu is held.
func (w *writer) writeWaiting(buf []byte) error {
	w.rbuf, w.rn, w.rerr = buf, 0, nil
	err := w.raw.Write(w.rawAll)
	if w.rerr != nil {
		err = w.rerr
	}
	w.rbuf, w.rerr = nil, nil
	return err
}

// writeAll writes w.rbuf[w.rn:] to the socket as writeRaw does, for an
// issuer's write of at most rawBulk bytes (writeWaiting): false while
// the socket is full, so that the runtime's poller waits for room and
// calls it again, true once everything is written or w.rerr says why
// not. Through the net package the same write entered the runtime's
// system-call state, which woke sysmon out of its deep sleep in a PE
// that had been idle; sysmon then wakes a thread of ours every 20 µs
// while the PE works, and those wake-ups were about two fifths of the
// context switches of a 2 x 2 barrier at GOMAXPROCS=1
// (docs/measuring.md, "Raw writes keep sysmon asleep"). It is a method
// value made once, so a write allocates nothing.
func (w *writer) writeAll(fd uintptr) bool {
	w.writeRaw(fd)
	return w.rn == len(w.rbuf) || w.rerr != nil
}

// flushNoWait writes what q holds without ever blocking, for the reader,
// which must keep reading whatever the peer does, or two PEs writing to
// each other could each wait for the other to read. It writes what the
// socket takes at once, payloads by reference (large replies) from where
// they lie in one writev(2), and puts the rest back at the head of the
// queue for the writer goroutine, saying so (left); a queue it cannot
// write (more than one payload by reference, one of more than
// readerRefs bytes, the bye) is the writer goroutine's too. mu is held and raw is not nil. It returns the error
// that broke the socket.
func (w *writer) flushNoWait(q *sendQueue) (left bool, err error) {
	refs := readerRefs
	if w.rawVecNoWait == nil {
		refs = 0
	}
	b, ok := q.takeNoWait(w.spare[:0], w.spareRefs[:0], refs)
	if !ok {
		return q.pending(), nil
	}
	w.writes.Add(1)
	var n int
	if len(b.refs) == 0 {
		w.rbuf, w.rn, w.rerr = b.out, 0, nil
		if err := w.raw.Write(w.rawWrite); err != nil && w.rerr == nil {
			w.rerr = err
		}
		n, err = w.rn, w.rerr
		w.rbuf = nil
	} else {
		w.setPieces(b.out, b.refs)
		w.pv, w.po, w.vn, w.rerr = 0, 0, 0, nil
		w.vlen = len(b.out)
		for _, s := range b.refs {
			w.vlen += len(s.ref)
		}
		if err := w.raw.Write(w.rawVecNoWait); err != nil && w.rerr == nil {
			w.rerr = err
		}
		clear(w.pieces)
		n, err = w.vn, w.rerr
	}
	w.rerr = nil
	total := len(b.out)
	for _, s := range b.refs {
		total += len(s.ref)
	}
	switch {
	case err == nil && n < total:
		// The queue takes the rest, in the storage of what was taken.
		rest, restRefs := restAfter(b.out, b.refs, n)
		w.spare, w.spareRefs = q.putBack(rest, restRefs)
		return true, nil
	case err == nil:
		w.written.Store(b.end)
	}
	clear(b.refs) // drop the references to the region's memory
	w.spare, w.spareRefs = b.out[:0], b.refs[:0]
	return false, err
}

// setPieces sets w.pieces to buf with the payloads refs inserted where they
// belong.
func (w *writer) setPieces(buf []byte, refs []segment) {
	w.pieces = w.pieces[:0]
	prev := 0
	for _, s := range refs {
		if s.at > prev {
			w.pieces = append(w.pieces, buf[prev:s.at])
		}
		w.pieces = append(w.pieces, s.ref)
		prev = s.at
	}
	if prev < len(buf) {
		w.pieces = append(w.pieces, buf[prev:])
	}
}

// writeByPolling writes buf with refs inserted from this goroutine with
// f, rawPoll or rawVec: rawPoll waits for socket space in poll(2) rather
// than in the runtime's poller (issuerPolls says why), and a poll bounded
// by pollWriteMax that sees no room hands the wait to the runtime's poller
// once, which also notices a socket being closed, and polls again after;
// rawVec waits in the runtime's poller at once.
func (w *writer) writeByPolling(buf []byte, refs []segment, f func(fd uintptr) bool) error {
	w.setPieces(buf, refs)
	w.pv, w.po, w.rerr = 0, 0, nil
	err := w.raw.Write(f)
	if w.rerr != nil {
		err = w.rerr
	}
	clear(w.pieces)
	w.rerr = nil
	return err
}

// pollWriteMax bounds one poll(2) of writePolling for socket space.
const pollWriteMax = 10 * time.Millisecond
