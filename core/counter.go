package core

import (
	"sync/atomic"
	"time"
)

// Counter counts the operations an endpoint issued and those that
// completed, in the spirit of libfabric's fi_cntr. Providers call Issue when
// an operation starts and Complete or Fail when it ends; Quiet waits for the
// two to meet. All methods are safe for concurrent use.
type Counter struct {
	issued    atomic.Uint64
	completed atomic.Uint64
	errors    atomic.Uint64
	firstErr  atomic.Pointer[error]
	event     Event
}

// Issue records n more operations in flight and returns the new issue count.
func (c *Counter) Issue(n uint64) uint64 { return c.issued.Add(n) }

// Complete records n successful completions.
func (c *Counter) Complete(n uint64) {
	c.completed.Add(n)
	c.event.Notify()
}

// Fail records the completion of one operation with an error. The first
// error since the last TakeErr is kept; any error wakes waiters.
func (c *Counter) Fail(err error) {
	c.firstErr.CompareAndSwap(nil, &err)
	c.errors.Add(1)
	c.completed.Add(1)
	c.event.Notify()
}

// Issued is the number of operations issued so far.
func (c *Counter) Issued() uint64 { return c.issued.Load() }

// Completed is the number of operations completed so far, with or without error.
func (c *Counter) Completed() uint64 { return c.completed.Load() }

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

// Wait returns when Completed reaches threshold, or ErrTimeout after
// timeout (<= 0 waits without limit). abort, if not nil, is consulted while
// blocked, so a lost peer ends the wait even if nobody completes anything.
func (c *Counter) Wait(threshold uint64, timeout time.Duration, abort func() error) error {
	if c.completed.Load() >= threshold {
		return nil
	}
	return c.event.Wait(func() bool { return c.completed.Load() >= threshold }, timeout, abort)
}

// Quiet waits until every operation issued so far has completed, then
// returns the first error among them, if any.
func (c *Counter) Quiet(timeout time.Duration, abort func() error) error {
	if err := c.Wait(c.issued.Load(), timeout, abort); err != nil {
		return err
	}
	return c.TakeErr()
}
