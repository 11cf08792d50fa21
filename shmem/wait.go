package shmem

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

const (
	// waitSpins is how often a waiter re-reads memory before it asks the
	// provider to put it to sleep: long enough to catch a reply already on
	// its way, short enough not to starve other PEs of a shared core.
	waitSpins = 200
	// waitSlice bounds one sleep: a wake-up the provider cannot signal (a
	// plain store by another goroutine of this process) is seen this late
	// at worst, and a lost peer is noticed this often.
	waitSlice = time.Millisecond
)

// waitFor returns once cond holds, or with an error once a peer is lost or
// the World is finalized. It spins briefly, then sleeps in the provider's
// LocalWaiter (futex or channel), or backs off where there is none.
//
// off and n name the heap bytes cond reads, so the provider wakes this
// waiter only for writes to them.
func (w *World) waitFor(off, n int, cond func() bool) error {
	for i := 0; i < waitSpins; i++ {
		if cond() {
			return nil
		}
	}
	if w.waiter != nil {
		seq, watch := w.waiter.WaitArm(w.heap, off, n)
		defer w.waiter.WaitDisarm(watch)
		for !cond() {
			if err := w.Err(); err != nil {
				return err
			}
			seq = w.waiter.WaitChange(seq, waitSlice)
		}
		return nil
	}
	b := core.Backoff{Max: waitSlice}
	for !cond() {
		if err := w.Err(); err != nil {
			return err
		}
		b.Pause()
	}
	return nil
}

// waitGE waits until the internal word at off reaches v.
func (w *World) waitGE(off int, v uint64) error {
	p := mem.Word64(w.local, off)
	return w.waitFor(off, 8, func() bool { return atomic.LoadUint64(p) >= v })
}

// WaitUntil blocks until the symmetric *ivar on this PE satisfies
// *ivar cmp v, as a store by another PE (or goroutine) makes it
// (shmem_wait_until). It returns an error if ivar is not symmetric, if a
// peer is lost, or if the World is finalized.
func WaitUntil[T WaitElem](c Ctx, ivar *T, cmp Cmp, v T) error {
	w := c.context().w
	off, err := w.offset("wait_until", mem.PtrAddr(ivar), mem.SizeOf[T]())
	if err != nil {
		return err
	}
	if err := checkCmp(cmp); err != nil {
		return err
	}
	return w.waitFor(off, mem.SizeOf[T](), func() bool { return compare(mem.Load(ivar), cmp, v) })
}

// Test reports whether the symmetric *ivar on this PE satisfies
// *ivar cmp v, without waiting (shmem_test).
func Test[T WaitElem](c Ctx, ivar *T, cmp Cmp, v T) (bool, error) {
	w := c.context().w
	if _, err := w.offset("test", mem.PtrAddr(ivar), mem.SizeOf[T]()); err != nil {
		return false, err
	}
	if err := checkCmp(cmp); err != nil {
		return false, err
	}
	return compare(mem.Load(ivar), cmp, v), nil
}

func checkCmp(c Cmp) error {
	if c < CmpEQ || c > CmpLE {
		return &cmpError{c}
	}
	return nil
}

type cmpError struct{ c Cmp }

func (e *cmpError) Error() string {
	return fmt.Sprintf("shmem: comparison %d is not one of CmpEQ, CmpNE, CmpGT, CmpGE, CmpLT, CmpLE", uint8(e.c))
}

func (e *cmpError) Unwrap() error { return core.ErrInvalid }
