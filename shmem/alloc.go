package shmem

import (
	"fmt"
	"math/bits"
	"sort"

	"github.com/goshmem/goshmem/core"
)

// minAlign is the alignment of every symmetric allocation: one cache line,
// so that separately allocated flags never share a line.
const minAlign = 64

// allocator hands out offsets in [start, end) of the heap region. It is
// deterministic: the same sequence of calls gives the same offsets on every
// PE, which is what makes the heap symmetric.
type allocator struct {
	start, end int
	free       []span      // sorted by offset, coalesced
	used       map[int]int // offset -> size of live allocations
	touched    int         // offsets at or above this were never handed out: still zero
}

type span struct{ off, size int }

func (a *allocator) init(start, end int) {
	a.start, a.end, a.touched = start, end, start
	a.free = []span{{start, end - start}}
	a.used = map[int]int{}
}

func alignUp(x, a int) int { return (x + a - 1) &^ (a - 1) }

// alloc is allocAt for a heap at address 0, where an offset's alignment
// is the address's.
func (a *allocator) alloc(size, align int) (off int, ok bool) {
	return a.allocAt(0, size, align)
}

// allocAt returns the offset of size bytes whose address, in a heap whose
// offset 0 is at base, is aligned to align (a power of two); ok is false
// if no free block can hold them. It is the address a program sees, so
// that is what must be aligned; the offset is what must be the same on
// every PE. Both hold at once because core.Region promises every PE's
// heap an address aligned to the largest power of two not above its
// length: for any align up to that, base+off is aligned exactly when off
// is, on every PE alike. An alignment beyond it is refused, since PEs'
// bases may differ modulo it (and no block of the heap but its very start
// could have it).
func (a *allocator) allocAt(base uintptr, size, align int) (off int, ok bool) {
	if align < minAlign {
		align = minAlign
	}
	if align > 1<<(bits.Len(uint(a.end))-1) {
		return 0, false
	}
	size = alignUp(max(size, 1), minAlign)
	for i, s := range a.free {
		// Step from s.off up to where base+start is a multiple of align.
		start := s.off + int((-(base + uintptr(s.off)))&uintptr(align-1))
		if start+size > s.off+s.size || start+size < start {
			continue
		}
		// Carve [start, start+size) out of s, keeping both remainders.
		var keep []span
		if start > s.off {
			keep = append(keep, span{s.off, start - s.off})
		}
		if end := start + size; end < s.off+s.size {
			keep = append(keep, span{end, s.off + s.size - end})
		}
		a.free = append(a.free[:i], append(keep, a.free[i+1:]...)...)
		a.used[start] = size
		return start, true
	}
	return 0, false
}

// release returns the allocation at off to the free list.
func (a *allocator) release(off int) bool {
	size, ok := a.used[off]
	if !ok {
		return false
	}
	delete(a.used, off)
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].off > off })
	a.free = append(a.free, span{})
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = span{off, size}
	// Coalesce with the right, then the left neighbour.
	if i+1 < len(a.free) && a.free[i].off+a.free[i].size == a.free[i+1].off {
		a.free[i].size += a.free[i+1].size
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].off+a.free[i-1].size == a.free[i].off {
		a.free[i-1].size += a.free[i].size
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
	return true
}

// stats reports free bytes and the largest free block.
func (a *allocator) stats() (free, largest int) {
	for _, s := range a.free {
		free += s.size
		largest = max(largest, s.size)
	}
	return free, largest
}

// AllocError reports a symmetric allocation the heap cannot satisfy.
type AllocError struct {
	Op                string
	Size              int // bytes asked for
	HeapSize          int
	Free, LargestFree int
}

func (e *AllocError) Error() string {
	return fmt.Sprintf("shmem: %s of %d bytes: the symmetric heap of %s has %d bytes free, at most %d in one block; raise %s",
		e.Op, e.Size, core.FormatSize(int64(e.HeapSize)), e.Free, e.LargestFree, EnvSymmetricSize)
}

func (e *AllocError) Unwrap() error { return core.ErrNoMemory }
