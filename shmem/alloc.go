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

	// committed has a bit per commitGranule of the region, from offset
	// 0, set once the heap's part of it is committed (see World.commit):
	// a block handed out again, or inside a granule committed for
	// another, costs nothing to commit.
	committed []uint64
}

type span struct{ off, size int }

// commitGranule is how much of the heap is committed at a time: one
// malloc of 64 bytes commits 2 MiB of /dev/shm (at worst two granules,
// for a block across a boundary), and a program that allocates many small
// blocks asks the provider once per 2 MiB, not once per block.
const commitGranule = 2 << 20

func (a *allocator) init(start, end int) {
	a.start, a.end, a.touched = start, end, start
	a.free = []span{{start, end - start}}
	a.used = map[int]int{}
	a.committed = make([]uint64, (end+commitGranule-1)/commitGranule/64+1)
}

// uncommitted returns the granules [lo, hi) of the first run of granules
// not committed yet among those that bytes [off, off+n) lie in, from
// granule from on; lo == hi when every one is committed.
func (a *allocator) uncommitted(off, n, from int) (lo, hi int) {
	last := (off + n - 1) / commitGranule
	lo = max(off/commitGranule, from)
	for lo <= last && a.isCommitted(lo) {
		lo++
	}
	for hi = lo; hi <= last && !a.isCommitted(hi); hi++ {
	}
	return lo, hi
}

func (a *allocator) isCommitted(g int) bool { return a.committed[g/64]&(1<<(g%64)) != 0 }

// markCommitted records granules [lo, hi) as committed.
func (a *allocator) markCommitted(lo, hi int) {
	for g := lo; g < hi; g++ {
		a.committed[g/64] |= 1 << (g % 64)
	}
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

// AllocError reports a symmetric allocation the heap cannot satisfy: it
// has no free block large enough, or, where the heap is reserved at start
// and committed as blocks are handed out (loopback's heap in /dev/shm),
// the memory for the block could not be committed on some PE. Either way
// every PE gets the error, and C's shmem_malloc returns NULL.
type AllocError struct {
	Op                string
	Size              int // bytes asked for
	HeapSize          int
	Free, LargestFree int

	// Uncommitted: the heap had the block free, but PE could not commit
	// its memory in Dir (the job's shared-memory directory, /dev/shm
	// unless GOSHMEM_SHM_DIR says otherwise). Cause is the provider's
	// error, on that PE only; other PEs learn only that it failed. Where
	// several PEs failed, PE is this one if it did, else the highest.
	Uncommitted bool
	PE          int
	Dir         string
	Cause       error
}

func (e *AllocError) Error() string {
	if e.Uncommitted {
		msg := fmt.Sprintf("shmem: %s of %d bytes: the symmetric heap of %s=%s has the block free, but PE %d could not commit "+
			"its memory in %s, which has no room left for it (the heap is reserved at start and takes memory of %s only as blocks are "+
			"handed out): make room there, run fewer PEs on this host, or set %s to a larger file system",
			e.Op, e.Size, EnvSymmetricSize, core.FormatSize(int64(e.HeapSize)), e.PE, e.Dir, e.Dir, core.EnvShmDir)
		if e.Cause != nil {
			msg += ": " + e.Cause.Error()
		}
		return msg
	}
	return fmt.Sprintf("shmem: %s of %d bytes: the symmetric heap of %s has %d bytes free, at most %d in one block; raise %s",
		e.Op, e.Size, core.FormatSize(int64(e.HeapSize)), e.Free, e.LargestFree, EnvSymmetricSize)
}

func (e *AllocError) Unwrap() []error {
	if e.Cause != nil {
		return []error{core.ErrNoMemory, e.Cause}
	}
	return []error{core.ErrNoMemory}
}
