package shmem

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Distributed locks (shmem_set_lock, shmem_test_lock, shmem_clear_lock)
// are an MCS queue lock (Mellor-Crummey and Scott) over remote atomics.
// The symmetric int64 lock word, zero on every PE when unlocked, is split
// in two 32-bit halves:
//
//   - the tail, meaningful on the lock's home PE only: 0 when the lock is
//     free, else 1 + the number of the PE last in the queue;
//   - the queue node, on every PE: the low 31 bits hold 1 + the number of
//     the PE queued behind this one (0: none yet), the top bit is set by
//     the predecessor when it hands the lock over.
//
// A PE joins the queue with one swap on the tail, links itself behind its
// predecessor with one atomic or, and then waits on its own node, in its
// own memory: a release wakes exactly the next PE, never the whole queue.
// The home PE is chosen by the lock's offset, so many locks spread their
// tails over the job.
const (
	lockTail = 0 // offset of the tail in the lock word
	lockNode = 4 // offset of the queue node in the lock word
	lockGo   = uint64(1) << 31
	lockNext = lockGo - 1
)

// lockTable remembers which locks this PE holds, so that setting a lock
// twice or clearing one not held is an error rather than a deadlock or a
// corrupted queue.
type lockTable struct {
	mu   sync.Mutex
	held map[int]bool
}

// acquire marks the lock at off as being taken; it fails if this PE holds
// it or is taking it already.
func (t *lockTable) acquire(op string, off int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[off] {
		return fmt.Errorf("shmem: %s: this PE holds the lock already (or another of its goroutines is taking it); locks are held by PEs and are not recursive: %w", op, core.ErrInvalid)
	}
	if t.held == nil {
		t.held = map[int]bool{}
	}
	t.held[off] = true
	return nil
}

// release forgets the lock at off; it reports whether it was held.
func (t *lockTable) release(off int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ok := t.held[off]
	delete(t.held, off)
	return ok
}

// lockWord validates a lock word and returns its offset and home PE.
func (w *World) lockWord(op string, lock *int64) (off, home int, err error) {
	if err := w.Err(); err != nil {
		return 0, 0, err
	}
	off, err = w.offset(op, mem.PtrAddr(lock), 8)
	if err != nil {
		return 0, 0, err
	}
	if off%8 != 0 {
		return 0, 0, &core.AlignError{Offset: off, Align: 8}
	}
	sup := w.info.Atomics
	for _, o := range []core.AtomicOp{core.AtomicSwap, core.AtomicCSwap, core.AtomicOr} {
		if !sup.Supports(o, core.Uint32) {
			return 0, 0, fmt.Errorf("shmem: %s: provider %s lacks the 32-bit %s atomic locks are built on: %w",
				op, w.provider.Name(), o, core.ErrNotSupported)
		}
	}
	return off, (off / 8) % w.npes, nil
}

// lockAMO runs a fetching 32-bit atomic on the lock word and completes it.
func (w *World) lockAMO(op string, pe, off int, aop core.AtomicOp, v, cmp uint64) (uint64, error) {
	old, err := w.def.ep.FetchAtomic(pe, w.heap, off, aop, core.Uint32, v, cmp)
	if err != nil {
		// The lock's home or a queued PE may be gone because of a
		// global exit.
		return 0, fmt.Errorf("shmem: %s: %w", op, w.exitOr(err))
	}
	return old, nil
}

// node reads this PE's queue node of the lock at off.
func (w *World) node(off int) uint64 {
	return uint64(atomic.LoadUint32(mem.Word32(w.local, off+lockNode)))
}

// SetLock acquires the lock *lock, waiting until it is free
// (shmem_set_lock). *lock is a symmetric int64, zero on every PE before
// first use and not otherwise written by the program.
func SetLock(w *World, lock *int64) error {
	const op = "set_lock"
	off, home, err := w.lockWord(op, lock)
	if err != nil {
		return err
	}
	if err := w.syn.locks.acquire(op, off); err != nil {
		return err
	}
	if err := w.enqueue(op, off, home); err != nil {
		w.syn.locks.release(off)
		return err
	}
	return nil
}

// enqueue joins the lock's queue and waits for the lock to be handed over.
func (w *World) enqueue(op string, off, home int) error {
	me := uint64(w.me + 1)
	// Nobody writes this node until this PE is queued again.
	if _, err := w.lockAMO(op, w.me, off+lockNode, core.AtomicSwap, 0, 0); err != nil {
		return err
	}
	pred, err := w.lockAMO(op, home, off+lockTail, core.AtomicSwap, me, 0)
	if err != nil || pred == 0 {
		return err
	}
	if _, err := w.lockAMO(op, int(pred-1), off+lockNode, core.AtomicOr, me, 0); err != nil {
		return err
	}
	if err := w.waitFor(off+lockNode, 4, func() bool { return w.node(off)&lockGo != 0 }); err != nil {
		return fmt.Errorf("shmem: %s: %w", op, err)
	}
	return nil
}

// TestLock acquires the lock *lock if it is free and reports whether it
// did, without waiting (shmem_test_lock, which returns 0 where this
// returns true).
func TestLock(w *World, lock *int64) (bool, error) {
	const op = "test_lock"
	off, home, err := w.lockWord(op, lock)
	if err != nil {
		return false, err
	}
	if err := w.syn.locks.acquire(op, off); err != nil {
		return false, err
	}
	got := false
	defer func() {
		if !got {
			w.syn.locks.release(off)
		}
	}()
	if _, err := w.lockAMO(op, w.me, off+lockNode, core.AtomicSwap, 0, 0); err != nil {
		return false, err
	}
	old, err := w.lockAMO(op, home, off+lockTail, core.AtomicCSwap, uint64(w.me+1), 0)
	if err != nil {
		return false, err
	}
	got = old == 0
	return got, nil
}

// ClearLock completes this PE's puts and atomics on the default context
// and releases the lock *lock, handing it to the next PE in the queue
// (shmem_clear_lock). Clearing a lock this PE does not hold is an error.
func ClearLock(w *World, lock *int64) error {
	const op = "clear_lock"
	off, home, err := w.lockWord(op, lock)
	if err != nil {
		return err
	}
	if !w.syn.locks.release(off) {
		return fmt.Errorf("shmem: %s: this PE does not hold the lock: %w", op, core.ErrInvalid)
	}
	if err := w.def.ep.Quiet(); err != nil {
		return fmt.Errorf("shmem: %s: %w", op, err)
	}
	me := uint64(w.me + 1)
	if w.node(off)&lockNext == 0 {
		old, err := w.lockAMO(op, home, off+lockTail, core.AtomicCSwap, 0, me)
		if err != nil || old == me {
			return err
		}
		// A PE swapped itself in behind this one and is linking: wait
		// for the link.
		if err := w.waitFor(off+lockNode, 4, func() bool { return w.node(off)&lockNext != 0 }); err != nil {
			return fmt.Errorf("shmem: %s: %w", op, err)
		}
	}
	next := int(w.node(off)&lockNext) - 1
	_, err = w.lockAMO(op, next, off+lockNode, core.AtomicOr, lockGo, 0)
	return err
}
