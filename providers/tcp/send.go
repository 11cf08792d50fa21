package tcp

import (
	"runtime"
	"time"
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

// send queues a non-fetching operation of ep: a header and, for puts up to
// injectSize, the payload copied. It returns when src may be reused: at
// once for a copied payload, after the write for one sent from where it
// lies. A signal, if sig is not nil, is queued right after the put and
// written with it.
func (c *conn) send(ep *endpoint, h *header, payload []byte, sig *header) error {
	wait, how, err := c.q.put(ep, h, payload, sig, ep.batch.Load())
	if err != nil {
		return err
	}
	c.write(how)
	if how == writeNow && wait != 0 && c.w.issuerPolls {
		c.noteLarge(len(payload))
	}
	if wait != 0 && c.w.written.Load() < wait {
		return c.err()
	}
	return nil
}

// sendBlocks queues a blocked put of ep, h's frame with the blocks of its
// shape gathered from src, stride bytes apart there, and gets it written
// as send does a small put's. It returns when src may be reused: at once,
// the blocks being copied.
func (c *conn) sendBlocks(ep *endpoint, h *header, src []byte, stride int) error {
	how, err := c.q.putBlocks(ep, h, src, stride, ep.batch.Load())
	if err != nil {
		return err
	}
	c.write(how)
	return nil
}

// write gets what the queue just took written as it said: now from this
// goroutine, now unless somebody is writing (who then takes it along), or
// by the writer.
func (c *conn) write(how int) {
	switch how {
	case writeNow:
		c.flush()
	case writeTry:
		if c.w.mu.TryLock() {
			c.flushLocked()
			c.w.mu.Unlock()
			c.q.wroteAlone()
		} else {
			c.q.wake()
		}
	}
}

// request queues a request whose reply fills r. The issuer of a blocking
// request waits for the reply anyway: it writes the request itself,
// without waking the writer. A non-blocking one is left to the writer.
func (c *conn) request(h *header, r *request) error {
	h.id = r.id
	if err := c.q.request(h, r.nbi); err != nil {
		return err
	}
	if !r.nbi {
		c.flush()
	}
	return nil
}

// flushNow writes the queue from this goroutine, unless somebody is
// writing already (who will write it). Issuers about to wait for a reply
// call it to save the writer's wake-up.
func (c *conn) flushNow() {
	if c.w.mu.TryLock() {
		c.flushLocked()
		c.w.mu.Unlock()
	}
}

// flush writes everything queued before it was called; an issuer calls
// it.
func (c *conn) flush() {
	c.w.mu.Lock()
	c.flushLocked()
	c.w.mu.Unlock()
}

// flushLocked writes the queue until it is empty; the writer's lock is
// held and the caller is an issuer, whose goroutine may be locked to its
// thread (writer.issuerPolls). A write that fails ends the connection.
func (c *conn) flushLocked() { c.flushLockedBy(c.w.issuerPolls) }

// flushLockedBy is flushLocked, the socket's waits in poll(2) on this
// thread if polls, else in the runtime's poller.
func (c *conn) flushLockedBy(polls bool) {
	if err := c.w.flushLocked(&c.q, polls); err != nil {
		c.fail(lostReason(c.d, err))
	}
}

// flushReader writes what the reader queued without ever blocking
// (writer.flushNoWait), or leaves it to the writer goroutine when
// somebody is writing or the socket allows no such write. What it leaves
// to the writer goroutine is a goroutine readied: the reader lets it run
// before it polls (read).
func (c *conn) flushReader() {
	c.rd.dirty = false
	if c.w.raw == nil || !c.w.mu.TryLock() {
		c.q.wake()
		return
	}
	left, err := c.w.flushNoWait(&c.q)
	c.w.mu.Unlock()
	if err != nil {
		c.fail(lostReason(c.d, err))
	}
	if left {
		c.rd.sock.readied = true
	}
}

// writeLoop is the connection's writer: woken by a kick, it writes what is
// queued, optionally lingering FLUSH_IDLE for more first.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	var hold *time.Timer // batchHold's, made at the first batch
	defer func() {
		if hold != nil {
			hold.Stop()
		}
	}()
	for {
		select {
		case <-c.q.kick:
		case <-c.dead:
			return
		}
		if !c.holdBatch(&hold) {
			return
		}
		if idle := c.d.set.flushIdle; idle > 0 {
			c.linger(idle)
		}
		// The writer goroutine is not locked to a thread: it parks.
		c.w.mu.Lock()
		c.flushLockedBy(false)
		c.w.mu.Unlock()
		if c.q.drained() {
			return
		}
	}
}

// linger yields the CPU for up to d while less than half a buffer is
// queued, so more small operations join the next write.
func (c *conn) linger(d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		if c.q.full() {
			return
		}
		runtime.Gosched()
	}
}

// answer queues a frame of the reader's (ack or reply), the payload
// copied, or with ref sent from where it lies. The reader writes it, or
// wakes the writer, before it next waits for the socket (see serve).
func (c *conn) answer(h *header, payload, ref []byte) {
	if c.q.answer(h, payload, ref) {
		c.rd.dirty = true
	}
}

// sendBye queues the last frame of a clean close, also after the peer's
// (which stops the connection but leaves the socket open for this one).
func (c *conn) sendBye() {
	select {
	case <-c.dead:
		return
	default:
	}
	c.q.queueBye()
}
