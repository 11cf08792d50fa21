package tcp

import (
	"net"
	"runtime"
	"time"

	"github.com/goshmem/goshmem/core"
)

// burstGap is the time between two puts under which the second is part of
// a burst, left to the writer to combine.
const burstGap = int64(2 * time.Microsecond)

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }

var epoch = time.Now()

// smallReply is the largest reply copied into the queue; larger ones are
// written from the heap.
const smallReply = injectSize

// lockSend takes bmu for an issuer, or returns why nothing may be queued.
func (c *conn) lockSend() error {
	c.bmu.Lock()
	if c.bye {
		c.bmu.Unlock()
		return core.ErrClosed
	}
	if e := c.failed.Load(); e != nil {
		c.bmu.Unlock()
		return e
	}
	return nil
}

// kickLocked wakes the writer unless it is already awake; bmu is held.
func (c *conn) kickLocked() {
	if !c.kicked {
		c.kicked = true
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// countLocked numbers a queued non-fetching operation of ep, on the
// connection and on ep's counter. It joins the last batch if that is ep's
// and holds ep's operation numbered just before: an ack then completes a
// run of numbers. Numbering it here, once queued, means an operation that
// could not be queued was never issued, and one that was is completed by
// its ack or its connection's failure.
func (c *conn) countLocked(ep *endpoint) {
	c.sent++
	seq := ep.counter.Issue(1)
	if n := len(c.batches); n > c.bhead {
		if b := &c.batches[n-1]; b.ep == ep && b.seq+b.n == seq {
			b.end, b.n = c.sent, b.n+1
			return
		}
	}
	c.batches = append(c.batches, batch{ep: ep, end: c.sent, n: 1, seq: seq})
}

// send queues a non-fetching operation of ep: a header and,
// for puts up to injectSize, the payload copied. It returns when src may
// be reused: at once for a copied payload, after the write for one sent
// from where it lies.
func (c *conn) send(ep *endpoint, h *header, payload []byte) error {
	if err := c.lockSend(); err != nil {
		return err
	}
	c.out = appendHeader(c.out, h)
	byRef := len(payload) > injectSize
	if byRef {
		c.refs = append(c.refs, segment{at: len(c.out), ref: payload})
	} else {
		c.out = append(c.out, payload...)
	}
	c.countLocked(ep)
	c.enq++
	ticket := c.enq
	full := len(c.out) >= c.d.set.buffer
	now := nanotime()
	// A put that follows the last by more than burstGap while the writer
	// sleeps starts no burst: write it now, saving the writer's wake-up.
	// Within a burst, the writer combines.
	alone := !c.kicked && now-c.lastSend > burstGap
	c.lastSend = now
	if !alone {
		c.kickLocked()
	}
	c.bmu.Unlock()
	switch {
	case byRef || full:
		// Write it ourselves: we would wait for the writer anyway.
		c.flush()
	case alone:
		if c.wmu.TryLock() {
			c.flushLocked()
			c.wmu.Unlock()
		} else {
			c.wakeWriter()
		}
	}
	if byRef && c.written.Load() < ticket {
		return c.err()
	}
	return nil
}

// request queues a request whose reply fills r. The issuer of a blocking
// request waits for the reply anyway: it writes the request itself,
// without waking the writer. A non-blocking one is left to the writer.
func (c *conn) request(h *header, r *request) error {
	if err := c.lockSend(); err != nil {
		return err
	}
	h.id = r.id
	c.out = appendHeader(c.out, h)
	c.enq++
	if r.nbi {
		c.kickLocked()
	}
	c.bmu.Unlock()
	if !r.nbi {
		c.flush()
	}
	return nil
}

// flushNow writes the queue from this goroutine, unless somebody is
// writing already (who will write it). Issuers about to wait for a reply
// call it to save the writer's wake-up.
func (c *conn) flushNow() {
	if c.wmu.TryLock() {
		c.flushLocked()
		c.wmu.Unlock()
	}
}

// flush writes everything queued before it was called.
func (c *conn) flush() {
	c.wmu.Lock()
	c.flushLocked()
	c.wmu.Unlock()
}

func (c *conn) flushLocked() {
	for {
		c.bmu.Lock()
		if len(c.out) == 0 && len(c.refs) == 0 {
			c.kicked = false
			c.bmu.Unlock()
			return
		}
		buf, refs, end, bye := c.out, c.refs, c.enq, c.bye
		c.out, c.refs = c.spare[:0], c.spareRefs[:0]
		c.bmu.Unlock()
		err := c.write(buf, refs)
		clear(refs) // drop the references to callers' buffers
		c.spare, c.spareRefs = buf[:0], refs[:0]
		if err != nil {
			c.fail(lostReason(c.d, err))
			return
		}
		c.written.Store(end)
		if bye {
			if tc, ok := c.nc.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
		}
	}
}

func (c *conn) write(buf []byte, refs []segment) error {
	if len(refs) == 0 {
		_, err := c.nc.Write(buf)
		return err
	}
	c.iov = c.iov[:0]
	prev := 0
	for _, s := range refs {
		if s.at > prev {
			c.iov = append(c.iov, buf[prev:s.at])
		}
		c.iov = append(c.iov, s.ref)
		prev = s.at
	}
	if prev < len(buf) {
		c.iov = append(c.iov, buf[prev:])
	}
	// WriteTo consumes c.bufs; being a field, it costs no allocation.
	c.bufs = c.iov
	_, err := c.bufs.WriteTo(c.nc)
	clear(c.iov)
	return err
}

// writeLoop is the connection's writer: woken by a kick, it writes what is
// queued, optionally lingering FLUSH_IDLE for more first.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	for {
		select {
		case <-c.kick:
		case <-c.dead:
			return
		}
		if idle := c.d.set.flushIdle; idle > 0 {
			c.linger(idle)
		}
		c.flush()
		c.bmu.Lock()
		done := c.bye && len(c.out) == 0 && len(c.refs) == 0
		c.bmu.Unlock()
		if done {
			return
		}
	}
}

// linger yields the CPU for up to d while less than half a buffer is
// queued, so more small operations join the next write.
func (c *conn) linger(d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		c.bmu.Lock()
		enough := len(c.out) >= c.d.set.buffer/2 || len(c.refs) > 0 || c.bye
		c.bmu.Unlock()
		if enough {
			return
		}
		runtime.Gosched()
	}
}

// queue appends a frame of the reader's (ack or reply), the payload
// copied, or with ref sent from where it lies. The reader writes it, or
// wakes the writer, before it next waits for the socket (see read).
func (c *conn) queue(h *header, payload, ref []byte) {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.bye || c.failed.Load() != nil {
		return
	}
	c.out = appendHeader(c.out, h)
	c.out = append(c.out, payload...)
	if ref != nil {
		c.refs = append(c.refs, segment{at: len(c.out), ref: ref})
	}
	c.enq++
	c.dirty = true
}

// readerFlush writes what the reader queued without ever blocking: the
// reader must keep reading whatever the peer does, or two PEs writing to
// each other could each wait for the other to read. It writes what the
// socket takes at once, puts the rest back at the head of the queue and
// leaves it, like a queue it cannot write now (somebody is writing, or
// there are payloads by reference), to the writer.
func (c *conn) readerFlush() {
	c.dirty = false
	if c.raw == nil || !c.wmu.TryLock() {
		c.wakeWriter()
		return
	}
	defer c.wmu.Unlock()
	c.bmu.Lock()
	if len(c.refs) > 0 || len(c.out) == 0 || c.bye {
		// Payloads by reference, and the clean close, which ends with a
		// half-close, are the writer's.
		if len(c.out) > 0 {
			c.kickLocked()
		}
		c.bmu.Unlock()
		return
	}
	buf, end := c.out, c.enq
	c.out = c.spare[:0]
	c.bmu.Unlock()
	c.rbuf, c.rn, c.rerr = buf, 0, nil
	if err := c.raw.Write(c.rawWrite); err != nil && c.rerr == nil {
		c.rerr = err
	}
	n, err := c.rn, c.rerr
	c.rbuf = nil
	if err != nil {
		c.fail(lostReason(c.d, err))
		return
	}
	if n == len(buf) {
		c.spare = buf[:0]
		c.written.Store(end)
		return
	}
	// Put the rest back in front of what was queued meanwhile.
	c.bmu.Lock()
	rest := len(buf) - n
	out := append(append(make([]byte, 0, rest+len(c.out)), buf[n:]...), c.out...)
	for i := range c.refs {
		c.refs[i].at += rest
	}
	c.spare, c.out = c.out[:0], out
	c.kickLocked()
	c.bmu.Unlock()
}

// wakeWriter wakes the writer.
func (c *conn) wakeWriter() {
	c.bmu.Lock()
	c.kickLocked()
	c.bmu.Unlock()
}

// sendBye queues the last frame of a clean close, also after the peer's
// (which stops the connection but leaves the socket open for this one).
func (c *conn) sendBye() {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	select {
	case <-c.dead:
		return
	default:
	}
	if c.bye {
		return
	}
	c.out = appendHeader(c.out, &header{op: opBye})
	c.bye = true
	c.enq++
	c.kickLocked()
}
