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
// corrupted queue. Locks are known by address: a lock in the heap and one
// in registered static data may share an offset.
type lockTable struct {
	mu   sync.Mutex
	held map[uintptr]bool
}

// acquire marks the lock at addr as being taken; it fails if this PE
// holds it or is taking it already.
func (t *lockTable) acquire(op string, addr uintptr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[addr] {
		return fmt.Errorf("shmem: %s: this PE holds the lock already (or another of its goroutines is taking it); locks are held by PEs and are not recursive: %w", op, core.ErrInvalid)
	}
	if t.held == nil {
		t.held = map[uintptr]bool{}
	}
	t.held[addr] = true
	return nil
}

// release forgets the lock at addr; it reports whether it was held.
func (t *lockTable) release(addr uintptr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ok := t.held[addr]
	delete(t.held, addr)
	return ok
}

// lockRef is a validated lock word: its region, the heap or registered
// static data (a C program's "static long lock"), its offset there, its
// home PE, and this PE's copy.
type lockRef struct {
	r    core.Region
	off  int
	home int
	word *int64
}

func (l *lockRef) addr() uintptr { return mem.PtrAddr(l.word) }

// node reads this PE's queue node of the lock.
func (l *lockRef) node() uint64 {
	return uint64(atomic.LoadUint32(mem.Word32(mem.ValueBytes(l.word), lockNode)))
}

// lockWord validates a lock word and returns where it is and its home PE.
func (w *World) lockWord(op string, lock *int64) (lockRef, error) {
	if err := w.Err(); err != nil {
		return lockRef{}, err
	}
	r, off, err := w.sym(op, mem.PtrAddr(lock), 8)
	if err != nil {
		return lockRef{}, err
	}
	if off%8 != 0 {
		return lockRef{}, &core.AlignError{Offset: off, Align: 8}
	}
	sup := w.info.Atomics
	for _, o := range []core.AtomicOp{core.AtomicSwap, core.AtomicCSwap, core.AtomicOr} {
		if !sup.Supports(o, core.Uint32) {
			return lockRef{}, fmt.Errorf("shmem: %s: provider %s lacks the 32-bit %s atomic locks are built on: %w",
				op, w.provider.Name(), o, core.ErrNotSupported)
		}
	}
	return lockRef{r: r, off: off, home: (off / 8) % w.npes, word: lock}, nil
}

// lockAMO runs a fetching 32-bit atomic on the half of l at field
// (lockTail or lockNode) on PE pe, and completes it.
func (w *World) lockAMO(op string, l *lockRef, pe, field int, aop core.AtomicOp, v, cmp uint64) (uint64, error) {
	old, err := w.def.ep.FetchAtomic(pe, l.r, l.off+field, aop, core.Uint32, v, cmp)
	if err != nil {
		// The lock's home or a queued PE may be gone because of a
		// global exit.
		return 0, fmt.Errorf("shmem: %s: %w", op, w.exitOr(err))
	}
	return old, nil
}

// SetLock acquires the lock *lock, waiting until it is free
// (shmem_set_lock). *lock is a symmetric int64, zero on every PE before
// first use and not otherwise written by the program.
func SetLock(w *World, lock *int64) error {
	const op = "set_lock"
	l, err := w.lockWord(op, lock)
	if err != nil {
		return err
	}
	if err := w.syn.locks.acquire(op, l.addr()); err != nil {
		return err
	}
	if err := w.enqueue(op, &l); err != nil {
		w.syn.locks.release(l.addr())
		return err
	}
	return nil
}

// enqueue joins the lock's queue and waits for the lock to be handed over.
func (w *World) enqueue(op string, l *lockRef) error {
	me := uint64(w.me + 1)
	// Nobody writes this node until this PE is queued again.
	if _, err := w.lockAMO(op, l, w.me, lockNode, core.AtomicSwap, 0, 0); err != nil {
		return err
	}
	pred, err := w.lockAMO(op, l, l.home, lockTail, core.AtomicSwap, me, 0)
	if err != nil || pred == 0 {
		return err
	}
	if _, err := w.lockAMO(op, l, int(pred-1), lockNode, core.AtomicOr, me, 0); err != nil {
		return err
	}
	if err := w.waitIn(among{op: "set_lock"}, l.r, l.off+lockNode, 4, func() bool { return l.node()&lockGo != 0 }); err != nil {
		return fmt.Errorf("shmem: %s: %w", op, err)
	}
	return nil
}

// TestLock acquires the lock *lock if it is free and reports whether it
// did, without waiting (shmem_test_lock, which returns 0 where this
// returns true).
func TestLock(w *World, lock *int64) (bool, error) {
	const op = "test_lock"
	l, err := w.lockWord(op, lock)
	if err != nil {
		return false, err
	}
	if err := w.syn.locks.acquire(op, l.addr()); err != nil {
		return false, err
	}
	got := false
	defer func() {
		if !got {
			w.syn.locks.release(l.addr())
		}
	}()
	if _, err := w.lockAMO(op, &l, w.me, lockNode, core.AtomicSwap, 0, 0); err != nil {
		return false, err
	}
	old, err := w.lockAMO(op, &l, l.home, lockTail, core.AtomicCSwap, uint64(w.me+1), 0)
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
	l, err := w.lockWord(op, lock)
	if err != nil {
		return err
	}
	if !w.syn.locks.release(l.addr()) {
		return fmt.Errorf("shmem: %s: this PE does not hold the lock: %w", op, core.ErrInvalid)
	}
	if err := w.def.ep.Quiet(); err != nil {
		return fmt.Errorf("shmem: %s: %w", op, err)
	}
	me := uint64(w.me + 1)
	if l.node()&lockNext == 0 {
		old, err := w.lockAMO(op, &l, l.home, lockTail, core.AtomicCSwap, 0, me)
		if err != nil || old == me {
			return err
		}
		// A PE swapped itself in behind this one and is linking: wait
		// for the link.
		if err := w.waitIn(among{op: "set_lock"}, l.r, l.off+lockNode, 4, func() bool { return l.node()&lockNext != 0 }); err != nil {
			return fmt.Errorf("shmem: %s: %w", op, err)
		}
	}
	next := int(l.node()&lockNext) - 1
	_, err = w.lockAMO(op, &l, next, lockNode, core.AtomicOr, lockGo, 0)
	return err
}
