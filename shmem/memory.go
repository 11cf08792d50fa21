package shmem

import (
	"errors"
	"fmt"
	"math"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Malloc allocates n elements of T on the symmetric heap of every PE and
// returns this PE's part (shmem_malloc). It is collective: every PE asks
// for the same n, in the same order, and gets the same offset; a PE that
// asks for something else gets an error, as do all the others. It holds
// a barrier, which quiets the default context as BarrierAll does. Unlike
// C, the memory is zeroed, as Go memory always is. Malloc of zero
// elements returns nil.
func Malloc[T Elem](w *World, n int) ([]T, error) {
	return allocate[T](w, "malloc", n, minAlign)
}

// Calloc is Malloc; it exists because the spec has it (shmem_calloc).
func Calloc[T Elem](w *World, n int) ([]T, error) {
	return allocate[T](w, "calloc", n, minAlign)
}

// Align is Malloc with the start aligned to align bytes, a power of two
// (shmem_align). The alignment is the address's, &s[0], on every PE, and
// the block is as symmetric as Malloc's. Any power of two up to the heap
// size can be asked for; whether the heap has such a block free is
// another matter, and when it has not, every PE gets an *AllocError. An
// alignment larger than the whole heap gets one too.
func Align[T Elem](w *World, align, n int) ([]T, error) {
	if align <= 0 || align&(align-1) != 0 {
		return nil, fmt.Errorf("shmem: align: alignment %d is not a power of two: %w", align, core.ErrInvalid)
	}
	return allocate[T](w, "align", n, align)
}

// Free releases a symmetric allocation on every PE (shmem_free). It is
// collective and starts with a barrier, which quiets the default context
// as BarrierAll does, so no PE still accesses the memory.
// Free of nil only synchronises.
func Free[T Elem](w *World, s []T) error {
	if err := w.Err(); err != nil {
		return err
	}
	off := -1
	if s != nil {
		o, err := w.blockOffset("free", mem.Addr(s))
		if err != nil {
			return err
		}
		off = o
	}
	if err := w.agreeOn("free", "offset", uint64(off)); err != nil {
		return err
	}
	if off < 0 {
		return nil
	}
	w.allocMu.Lock()
	ok := w.alloc.release(off)
	w.allocMu.Unlock()
	if !ok {
		return fmt.Errorf("shmem: free: %#x was not returned by Malloc or was freed already: %w", mem.Addr(s), core.ErrInvalid)
	}
	return nil
}

// uncommitted marks, in the offset allocate agrees on, a PE that had the
// block free but could not commit its memory; the low bits are its
// number. Offsets are below MaxHeapSize, far from it, and failed (no
// block free) has every bit set.
const uncommitted = 1 << 62

func allocate[T Elem](w *World, op string, n, align int) ([]T, error) {
	if err := w.Err(); err != nil {
		return nil, err
	}
	esize := mem.SizeOf[T]()
	if n < 0 || n > math.MaxInt/esize {
		return nil, fmt.Errorf("shmem: %s of %d elements: the count must be from 0 to %d: %w", op, n, math.MaxInt/esize, core.ErrInvalid)
	}
	size := n * esize
	// Allocate, commit and zero before agreeing: once the agreement
	// returns, other PEs may put into the block, and zeroing must not
	// overwrite that. A block this PE cannot commit is given back at
	// once, and the agreement tells every PE so.
	const failed = math.MaxUint64
	off := uint64(failed)
	held := false
	var commitErr error
	if size > 0 {
		w.allocMu.Lock()
		if o, ok := w.alloc.allocAt(w.base, size, align); ok {
			if commitErr = w.commitBlock(o, size); commitErr != nil {
				w.alloc.release(o)
				off = uncommitted | uint64(w.me)
			} else {
				off, held = uint64(o), true
				if end := o + size; o < w.alloc.touched {
					clear(w.local[o:min(end, w.alloc.touched)])
					w.alloc.touched = max(w.alloc.touched, end)
				} else {
					w.alloc.touched = end
				}
			}
		}
		w.allocMu.Unlock()
	} else {
		off = 0
	}
	undo := func() {
		if held {
			w.allocMu.Lock()
			w.alloc.release(int(off))
			w.allocMu.Unlock()
		}
	}
	lo, hi, err := w.agree(op, "size", 2, uint64(size), uint64(align), off)
	switch {
	case err != nil:
	case hi[2] == failed && lo[2] == failed:
		w.allocMu.Lock()
		free, largest := w.alloc.stats()
		w.allocMu.Unlock()
		return nil, &AllocError{Op: op, Size: size, HeapSize: w.heapSize, Free: free, LargestFree: largest}
	case hi[2] != failed && hi[2]&uncommitted != 0:
		undo()
		pe := int(hi[2] &^ uncommitted)
		if commitErr != nil {
			pe = w.me
		}
		return nil, &AllocError{Op: op, Size: size, HeapSize: w.heapSize, Uncommitted: true,
			PE: pe, Dir: w.shmDir, Cause: commitErr}
	case lo[2] != hi[2]:
		err = outOfStep(op, 2, lo[2], hi[2])
	}
	if err != nil {
		undo()
		if held && w.base&uintptr(align-1) != 0 {
			// The offset was chosen for this PE's address; PEs whose
			// heaps sit differently modulo align chose others.
			err = fmt.Errorf("%w (the %s provider mapped this PE's heap at %#x, not aligned to %d as core.Region promises)",
				err, w.provider.Name(), w.base, align)
		}
		return nil, err
	}
	if size == 0 {
		return nil, nil
	}
	return mem.Slice[T](w.local[off : int(off)+size]), nil
}

// commitBlock commits the memory of the block of n bytes at off, where
// the heap is reserved: the granules it lies in that are not committed
// yet, as few calls as there are runs of them. The caller holds allocMu.
func (w *World) commitBlock(off, n int) error {
	if w.committer == nil {
		return nil
	}
	a := &w.alloc
	for g := 0; ; {
		lo, hi := a.uncommitted(off, n, g)
		if lo == hi {
			return nil
		}
		// The heap's part of the granules: the first may begin in
		// shmem's own area, committed at start, and the last may end
		// past the heap.
		start, end := max(lo*commitGranule, a.start), min(hi*commitGranule, a.end)
		var err error
		if w.commitHook != nil {
			err = w.commitHook(start, end-start)
		}
		if err == nil {
			err = w.committer.Commit(w.heap, start, end-start)
		}
		if err != nil {
			return err
		}
		a.markCommitted(lo, hi)
		g = hi
	}
}

// agreeOn runs the agreement collective on vals and fails, on every PE
// alike, if any value differs between PEs. names[0] names vals[0] in the
// message; the others are checked silently (they differ only if vals[0]
// does, or the heaps went out of step).
func (w *World) agreeOn(op, name string, vals ...uint64) error {
	_, _, err := w.agree(op, name, len(vals), vals...)
	return err
}

// agree is agreeOn that checks the first n of vals only, and returns
// every value's lowest and highest among the PEs. It is the barrier the
// memory management routines hold, and quiets the default context first,
// as BarrierAll does: what this PE put on it is complete at its targets
// once they return (1.6, the memory management routines).
func (w *World) agree(op, name string, n int, vals ...uint64) (lo, hi [agreeWords]uint64, err error) {
	if err := w.def.ep.Quiet(); err != nil {
		return lo, hi, fmt.Errorf("shmem: %s: %w", op, w.exitOr(err))
	}
	var v [agreeWords]uint64
	copy(v[:], vals)
	lo, hi, err = w.coll.agree(v)
	if err != nil {
		return lo, hi, fmt.Errorf("shmem: %s: %w", op, err)
	}
	for i := range n {
		if lo[i] != hi[i] {
			if i == 0 {
				return lo, hi, fmt.Errorf("shmem: %s is collective, but PEs passed different %ss: from %d to %d (this PE: %d): %w",
					op, name, int64(lo[i]), int64(hi[i]), int64(vals[i]), core.ErrInvalid)
			}
			return lo, hi, outOfStep(op, i, lo[i], hi[i])
		}
	}
	return lo, hi, nil
}

// outOfStep is the error of value i of an agreement, which differs
// between PEs only if their heaps went out of step.
func outOfStep(op string, i int, lo, hi uint64) error {
	return fmt.Errorf("shmem: %s is collective, but the PEs' symmetric heaps are out of step (value %d ranges from %d to %d): %w",
		op, i, lo, hi, core.ErrInvalid)
}

// Realloc changes the size of the symmetric allocation s to n elements on
// every PE (shmem_realloc). It is collective, like Malloc, and starts and
// ends with a barrier, so no PE still writes the old block or already
// writes the new one while the contents move. The first min(len(s), n)
// elements are kept; new elements are zero. Realloc of nil is Malloc; to
// zero elements it is Free and returns nil. If the heap cannot hold the
// new size, every PE gets an *AllocError and s stays valid and unchanged.
func Realloc[T Elem](w *World, s []T, n int) ([]T, error) {
	if s == nil {
		return Malloc[T](w, n)
	}
	if n == 0 {
		return nil, Free(w, s)
	}
	if err := w.Err(); err != nil {
		return nil, err
	}
	// The agreement is the opening barrier, and it fails on every PE
	// alike if one passed a block that is not symmetric, or another block.
	off, err := w.blockOffset("realloc", mem.Addr(s))
	block := uint64(off)
	if err != nil {
		block = math.MaxUint64
	}
	if aerr := w.agreeOn("realloc", "block offset", block); err != nil || aerr != nil {
		return nil, errors.Join(err, aerr)
	}
	grown, err := allocate[T](w, "realloc", n, minAlign)
	if err != nil {
		return nil, err
	}
	copy(grown, s)
	// Free is the closing barrier.
	if err := Free(w, s); err != nil {
		return nil, err
	}
	return grown, nil
}

// The hints MallocWithHints accepts (SHMEM_MALLOC_*).
const (
	// MallocAtomicsRemote: the memory will be the target of remote
	// atomics. Every allocation here starts on a cache line and is padded
	// to whole cache lines, so such words never share a line with another
	// allocation; the hint asks for nothing more.
	MallocAtomicsRemote uint = 1 << iota
	// MallocSignalRemote: the memory will hold signal words of PutSignal,
	// which other PEs update and this PE waits on. Same layout as
	// MallocAtomicsRemote; waiting on it sleeps on the provider's
	// LocalWaiter, as every wait does.
	MallocSignalRemote

	mallocHintsAll = MallocAtomicsRemote | MallocSignalRemote
)

// MallocWithHints is Malloc with hints about how the memory will be used
// (shmem_malloc_with_hints). Hints never change the result's meaning, so
// bits this implementation does not know (another implementation's, or
// a later specification's) are ignored, as the community's tests expect;
// SHMEM_DEBUG logs them. Like every argument of a collective allocation,
// the hints must be the same on every PE.
func MallocWithHints[T Elem](w *World, n int, hints uint) ([]T, error) {
	if unknown := hints &^ mallocHintsAll; unknown != 0 {
		w.log.Debug("malloc_with_hints: ignoring unknown hint bits", "bits", fmt.Sprintf("%#x", unknown))
	}
	return allocate[T](w, "malloc_with_hints", n, minAlign)
}
