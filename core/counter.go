package core

import (
	"sync"
	"sync/atomic"
	"time"
)

// Counter counts the operations an endpoint issued and those that
// completed, in the spirit of libfabric's fi_cntr, and knows which ones
// completed: Issue numbers the operations it records (1, 2, 3, ...), and
// Complete and Fail name the operations they end. Quiet then waits for
// exactly the operations issued before it. Comparing a count of
// completions with a count of issues would not do: when goroutines share
// an endpoint, operations issued after a quiet began may complete before
// the ones it waits for, and the counts would meet too early.
//
// All methods are safe for concurrent use. Completing an operation is
// allocation-free once the span between the oldest incomplete operation
// and the newest completed one has been seen.
type Counter struct {
	issued    atomic.Uint64
	completed atomic.Uint64
	// upTo is the completion watermark: every operation numbered up to it
	// has completed.
	upTo     atomic.Uint64
	errors   atomic.Uint64
	firstErr atomic.Pointer[error]
	event    Event

	mu    sync.Mutex
	ahead []uint64 // completed operations numbered above upTo+1, one bit each: s at bit s%(64*len)
	nset  uint64   // bits set in ahead
}

// Issue records n more operations in flight and returns the number of the
// first; they are numbered first, first+1, ..., first+n-1, the numbers
// Complete and Fail take.
func (c *Counter) Issue(n uint64) (first uint64) { return c.issued.Add(n) - n + 1 }

// Complete records the successful completion of the n operations numbered
// first through first+n-1.
func (c *Counter) Complete(first, n uint64) {
	if n == 0 {
		return
	}
	// Counted before the watermark moves: whoever sees the watermark
	// past them (a quiet) sees them counted.
	c.completed.Add(n)
	c.done(first, n)
	c.event.Notify()
}

// Fail records the completion with an error of the operation numbered
// seq. The first error since the last TakeErr is kept; any error wakes
// waiters.
func (c *Counter) Fail(seq uint64, err error) {
	c.firstErr.CompareAndSwap(nil, &err)
	c.errors.Add(1)
	c.completed.Add(1)
	c.done(seq, 1)
	c.event.Notify()
}

// done advances the watermark over operations first..first+n-1, or, if an
// earlier one is still in flight, remembers them.
func (c *Counter) done(first, n uint64) {
	c.mu.Lock()
	t := c.upTo.Load()
	if first <= t+1 {
		// In order (the common case), or overlapping what is done.
		nt := max(t, first+n-1)
		if c.nset > 0 {
			nt = c.drain(t, nt)
		}
		c.upTo.Store(nt)
	} else {
		c.mark(t, first, n)
	}
	c.mu.Unlock()
}

// drain moves the watermark from old to t, clearing the bits of the
// operations in between (completed twice, if any), and then past every
// completed operation that follows t; it returns the new watermark. The
// caller holds mu.
func (c *Counter) drain(old, t uint64) uint64 {
	size := uint64(len(c.ahead)) * 64
	if t-old >= size {
		// Every set bit was within size numbers above old.
		clear(c.ahead)
		c.nset = 0
		return t
	}
	for s := old + 1; s <= t && c.nset > 0; s++ {
		c.clear(s, size)
	}
	for c.nset > 0 && c.clear(t+1, size) {
		t++
	}
	return t
}

// clear clears the bit of operation s and reports whether it was set.
func (c *Counter) clear(s, size uint64) bool {
	i := s % size
	w, b := &c.ahead[i/64], uint64(1)<<(i%64)
	if *w&b == 0 {
		return false
	}
	*w &^= b
	c.nset--
	return true
}

// mark sets the bits of operations first..first+n-1, all above t+1,
// growing the bitmap if they lie beyond its reach. The caller holds mu.
func (c *Counter) mark(t, first, n uint64) {
	last := first + n - 1
	if size := uint64(len(c.ahead)) * 64; last-t > size {
		c.grow(t, last-t)
	}
	size := uint64(len(c.ahead)) * 64
	for s := first; s <= last; s++ {
		i := s % size
		w, b := &c.ahead[i/64], uint64(1)<<(i%64)
		if *w&b == 0 {
			*w |= b
			c.nset++
		}
	}
}

// grow makes the bitmap reach at least span numbers above t, keeping the
// bits set, which all lie in t+1..t+old size.
func (c *Counter) grow(t, span uint64) {
	old := c.ahead
	oldSize := uint64(len(old)) * 64
	size := max(oldSize, 256)
	for size < span {
		size *= 2
	}
	c.ahead = make([]uint64, size/64)
	for s := t + 1; s <= t+oldSize; s++ {
		i := s % oldSize
		if old[i/64]&(1<<(i%64)) != 0 {
			j := s % size
			c.ahead[j/64] |= 1 << (j % 64)
		}
	}
}

// Issued is the number of operations issued so far.
func (c *Counter) Issued() uint64 { return c.issued.Load() }

// Completed is the number of operations completed so far, with or without error.
func (c *Counter) Completed() uint64 { return c.completed.Load() }

// CompletedUpTo is the completion watermark: every operation numbered up
// to it has completed. Operations above it may have completed too.
func (c *Counter) CompletedUpTo() uint64 { return c.upTo.Load() }

// Errors is the number of operations that completed with an error.
func (c *Counter) Errors() uint64 { return c.errors.Load() }

// TakeErr returns the first error recorded since the last TakeErr and
// clears it.
func (c *Counter) TakeErr() error {
	if p := c.firstErr.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// Wait returns when every operation numbered up to seq has completed, or
// ErrTimeout after timeout (<= 0 waits without limit). abort, if not nil,
// is consulted while blocked, so a lost peer ends the wait even if nobody
// completes anything.
func (c *Counter) Wait(seq uint64, timeout time.Duration, abort func() error) error {
	if c.upTo.Load() >= seq {
		return nil
	}
	return c.event.Wait(func() bool { return c.upTo.Load() >= seq }, timeout, abort)
}

// Quiet waits until every operation issued so far has completed, then
// returns the first error among them, if any.
func (c *Counter) Quiet(timeout time.Duration, abort func() error) error {
	if err := c.Wait(c.issued.Load(), timeout, abort); err != nil {
		return err
	}
	return c.TakeErr()
}

// WaitFor is Wait for a condition of the caller's, re-checked as
// operations complete: cond reads what a completion changes (the
// watermark, a provider's table of operations in flight) and must not
// block. It returns nil once cond is true, ErrTimeout after timeout
// (<= 0 waits without limit), or abort's error.
func (c *Counter) WaitFor(cond func() bool, timeout time.Duration, abort func() error) error {
	if cond() {
		return nil
	}
	return c.event.Wait(cond, timeout, abort)
}
