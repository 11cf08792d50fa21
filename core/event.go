package core

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinPolls is how many times a waiter re-reads its condition before it
// yields; a few microseconds of spinning catches the common short wait
// without a sleep and wake.
const spinPolls = 256

// yieldPolls is how many times a waiter yields to other goroutines before
// it blocks.
const yieldPolls = 64

// Event wakes goroutines that block until some condition, tested by the
// waiter, becomes true. Notify is one atomic load when nobody waits, so
// producers may call it on every completion.
type Event struct {
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{}
}

// Notify wakes every goroutine blocked in Wait. Call it after making the
// condition true.
func (e *Event) Notify() {
	if e.waiters.Load() == 0 {
		return
	}
	e.mu.Lock()
	if e.ch != nil {
		close(e.ch)
		e.ch = nil
	}
	e.mu.Unlock()
}

// Wait returns nil once cond is true, or ErrTimeout after timeout; timeout
// <= 0 waits without limit. It spins, then yields, then blocks until Notify.
// abort, if not nil, is consulted while blocked; a non-nil result ends the
// wait with that error.
func (e *Event) Wait(cond func() bool, timeout time.Duration, abort func() error) error {
	for i := 0; i < spinPolls; i++ {
		if cond() {
			return nil
		}
	}
	for i := 0; i < yieldPolls; i++ {
		runtime.Gosched()
		if cond() {
			return nil
		}
	}
	return e.Block(cond, timeout, abort)
}

// Block is Wait without its spinning and yielding: it blocks until Notify
// as soon as cond is false. It is for callers that have spun already, and
// for goroutines that may be locked to their thread (a C program's caller),
// where each yield hands the runtime processor to another thread and back.
func (e *Event) Block(cond func() bool, timeout time.Duration, abort func() error) error {
	if cond() {
		return nil
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	// While blocked, wake now and then to consult abort: an aborting
	// condition (a lost peer) need not call Notify.
	var tick <-chan time.Time
	if abort != nil {
		t := time.NewTicker(abortPoll)
		defer t.Stop()
		tick = t.C
	}
	e.waiters.Add(1)
	defer e.waiters.Add(-1)
	for {
		e.mu.Lock()
		if e.ch == nil {
			e.ch = make(chan struct{})
		}
		ch := e.ch
		e.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-tick:
			if err := abort(); err != nil {
				return err
			}
		case <-deadline:
			if cond() {
				return nil
			}
			return ErrTimeout
		}
	}
}

// abortPoll is how often a blocked waiter consults its abort function.
const abortPoll = 20 * time.Millisecond

// Backoff paces a loop that polls a condition nobody signals: it spins,
// then yields to other goroutines, then sleeps in growing steps up to max.
// The zero value is ready.
type Backoff struct {
	n     int
	sleep time.Duration
	Max   time.Duration // longest sleep; 0 means 1ms
}

// Pause waits a little, longer each time.
func (b *Backoff) Pause() {
	b.n++
	switch {
	case b.n <= spinPolls:
		return
	case b.n <= spinPolls+yieldPolls:
		runtime.Gosched()
		return
	}
	max := b.Max
	if max <= 0 {
		max = time.Millisecond
	}
	if b.sleep == 0 {
		b.sleep = time.Microsecond
	} else if b.sleep < max {
		b.sleep *= 2
		if b.sleep > max {
			b.sleep = max
		}
	}
	time.Sleep(b.sleep)
}
