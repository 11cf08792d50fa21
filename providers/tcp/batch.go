package tcp

import (
	"time"
)

// Batches (core.Batcher: OpenSHMEM's sessions with SHMEM_CTX_SESSION_BATCH).
// Outside a batch a put that follows the last by more than burstGap is
// written by its issuer, one system call, and a burst is left to the
// writer goroutine, woken at its first put. In a batch an endpoint's small
// puts and non-fetching atomics are only queued: the writer is kicked at
// the first and waits batchHold before it writes, so every operation
// queued meanwhile leaves in its one write. What fills the queue's buffer
// is written at once by its issuer, as always. Whatever cannot wait ends
// the writer's wait (urgeLocked): an operation outside a batch, a
// request, the reader's acks and replies, the bye; and a quiet, a get or
// StopBatch writes the queue itself. So a batch never holds a frame for
// longer than batchHold, and a peer that waits for one is not held up
// for long.

// batchHold is how long the writer waits for more of a batch before it
// writes what is queued.
const batchHold = 100 * time.Microsecond

// holdLocked queues a batch's frame for the writer: it is kicked to write
// within batchHold unless it is awake already. mu is held.
func (q *sendQueue) holdLocked(now int64) {
	if q.kicked {
		return
	}
	q.held, q.heldAt = true, now
	q.kickLocked()
}

// urgeLocked ends the writer's wait for a batch, if it waits: something
// queued cannot wait. mu is held.
func (q *sendQueue) urgeLocked() {
	if !q.held {
		return
	}
	q.held = false
	select {
	case q.urge <- struct{}{}:
	default:
	}
}

// holdLeft is how much longer the writer is to wait for a batch, 0 if
// nothing is held.
func (q *sendQueue) holdLeft() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.held {
		return 0
	}
	return time.Duration(q.heldAt + int64(batchHold) - nanotime())
}

// holdBatch is the writer goroutine's wait for a batch, on t (made at
// the first): it returns once batchHold has passed since the first frame
// held, or something is urged, false if the connection ended meanwhile.
func (c *conn) holdBatch(t **time.Timer) bool {
	left := c.q.holdLeft()
	if left <= 0 {
		return true
	}
	if *t == nil {
		*t = time.NewTimer(left)
	} else {
		(*t).Reset(left)
	}
	select {
	case <-(*t).C:
	case <-c.q.urge:
		if !(*t).Stop() {
			<-(*t).C
		}
	case <-c.dead:
		return false
	}
	return true
}

// StartBatch implements core.Batcher: the endpoint's small puts and
// atomics are queued for the writer, which waits batchHold for more.
func (e *endpoint) StartBatch(int) { e.batch.Store(true) }

// StopBatch implements core.Batcher: what the batch queued is written.
func (e *endpoint) StopBatch() error {
	if err := e.CheckOpen("session stop"); err != nil {
		return err
	}
	if !e.batch.Swap(false) {
		return nil
	}
	for _, c := range e.d.conns {
		if c != nil && c.q.holding() {
			c.flushNow()
		}
	}
	return nil
}

// holding says whether frames wait for a batch's writer.
func (q *sendQueue) holding() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}
