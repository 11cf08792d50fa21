package main

/*
#include "handles.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/goshmem/goshmem/shmem"
)

// The symmetric heap from C. shmem's allocations are slices; C keeps only
// the address, so the length of each live block is remembered here, for
// realloc (which copies the old contents) and for free.
var blocks = struct {
	sync.Mutex
	size map[uintptr]int
}{size: map[uintptr]int{}}

// How gshgo_alloc allocates.
const (
	allocMalloc = iota
	allocCalloc
	allocAlign
	allocHints
)

// gshgo_alloc is shmem_malloc, _calloc (n is count*size, checked by C),
// _align and _malloc_with_hints. A request the heap cannot satisfy
// returns NULL, as the specification says; any other error (PEs asking
// for different sizes, a bad alignment) ends the job.
//
//export gshgo_alloc
func gshgo_alloc(how C.int, n, align C.size_t, hints C.long, fn *C.char) unsafe.Pointer {
	w := theWorld(fn)
	if uint64(n) > math.MaxInt || uint64(align) > math.MaxInt {
		failf(fn, "%d bytes, aligned to %d: too large", uint64(n), uint64(align))
	}
	var s []byte
	var err error
	switch how {
	case allocCalloc:
		s, err = shmem.Calloc[byte](w, int(n))
	case allocAlign:
		s, err = shmem.Align[byte](w, int(align), int(n))
	case allocHints:
		s, err = shmem.MallocWithHints[byte](w, int(n), mallocHints(hints))
	default:
		s, err = shmem.Malloc[byte](w, int(n))
	}
	return allocated(fn, s, err)
}

// allocated records a new block and returns its address, or NULL.
func allocated(fn *C.char, s []byte, err error) unsafe.Pointer {
	var aerr *shmem.AllocError
	if errors.As(err, &aerr) {
		debugf(fn, err)
		return nil
	}
	check(fn, err)
	if len(s) == 0 {
		return nil
	}
	p := unsafe.Pointer(&s[0])
	blocks.Lock()
	blocks.size[uintptr(p)] = len(s)
	blocks.Unlock()
	return p
}

// mallocHints maps SHMEM_MALLOC_* bits. Hints only say how memory will
// be used, so bits this library does not know are dropped, and the call
// is shmem_malloc for them, as programs written for other libraries'
// hints expect.
func mallocHints(h C.long) uint {
	var out uint
	if h&C.SHMEM_MALLOC_ATOMICS_REMOTE != 0 {
		out |= shmem.MallocAtomicsRemote
	}
	if h&C.SHMEM_MALLOC_SIGNAL_REMOTE != 0 {
		out |= shmem.MallocSignalRemote
	}
	return out
}

// block returns the live block at p, or a one-byte view of p when it is
// none, for shmem to report.
func block(fn *C.char, p unsafe.Pointer) []byte {
	blocks.Lock()
	n, ok := blocks.size[uintptr(p)]
	blocks.Unlock()
	if !ok {
		n = 1
	}
	return cbytes(fn, p, C.size_t(n))
}

// gshgo_free is shmem_free: collective; free of NULL only synchronises.
//
//export gshgo_free
func gshgo_free(p unsafe.Pointer, fn *C.char) {
	w := theWorld(fn)
	var s []byte
	if p != nil {
		s = block(fn, p)
	}
	check(fn, shmem.Free(w, s))
	if p != nil {
		blocks.Lock()
		delete(blocks.size, uintptr(p))
		blocks.Unlock()
	}
}

// gshgo_realloc is shmem_realloc: realloc of NULL is malloc, to 0 bytes
// is free and returns NULL; when the heap cannot hold the new size it
// returns NULL and the old block stays.
//
//export gshgo_realloc
func gshgo_realloc(p unsafe.Pointer, n C.size_t, fn *C.char) unsafe.Pointer {
	w := theWorld(fn)
	if uint64(n) > math.MaxInt {
		failf(fn, "%d bytes: too large", uint64(n))
	}
	if p == nil {
		s, err := shmem.Malloc[byte](w, int(n))
		return allocated(fn, s, err)
	}
	old := block(fn, p)
	s, err := shmem.Realloc(w, old, int(n))
	var aerr *shmem.AllocError
	if err == nil || !errors.As(err, &aerr) {
		// The old block is gone: freed, or moved into s.
		blocks.Lock()
		delete(blocks.size, uintptr(p))
		blocks.Unlock()
	}
	return allocated(fn, s, err)
}

// gshgo_ptr is shmem_ptr: pe's copy of the symmetric byte at p, mapped
// here, or NULL.
//
//export gshgo_ptr
func gshgo_ptr(p unsafe.Pointer, pe C.int, fn *C.char) unsafe.Pointer {
	w := theWorld(fn)
	if p == nil {
		return nil
	}
	s := shmem.Ptr(w, cbytes(fn, p, 1), int(pe))
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// gshgo_team_ptr is shmem_team_ptr: the team member pe's copy of the
// symmetric byte at p, mapped here, or NULL.
//
//export gshgo_team_ptr
func gshgo_team_ptr(x *C.struct_gsh_team, p unsafe.Pointer, pe C.int, fn *C.char) unsafe.Pointer {
	t := teamOf(x, fn)
	if p == nil {
		return nil
	}
	s := shmem.TeamPtr(t, cbytes(fn, p, 1), int(pe))
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

//export gshgo_addr_accessible
func gshgo_addr_accessible(p unsafe.Pointer, pe C.int, fn *C.char) C.int {
	w := theWorld(fn)
	if p == nil {
		return 0
	}
	if shmem.AddrAccessible(w, cbytes(fn, p, 1), int(pe)) {
		return 1
	}
	return 0
}

//export gshgo_pe_accessible
func gshgo_pe_accessible(pe C.int, fn *C.char) C.int {
	if theWorld(fn).PEAccessible(int(pe)) {
		return 1
	}
	return 0
}

// The lock routines (how: 0 set, 1 test, 2 clear); test returns 0 when
// it took the lock, as shmem_test_lock does.
//
//export gshgo_lock
func gshgo_lock(how C.int, lock *C.long, fn *C.char) C.int {
	w := theWorld(fn)
	l := element[int64](fn, unsafe.Pointer(lock))
	switch how {
	case 0:
		check(fn, shmem.SetLock(w, l))
	case 1:
		got, err := shmem.TestLock(w, l)
		check(fn, err)
		if !got {
			return 1
		}
	case 2:
		check(fn, shmem.ClearLock(w, l))
	default:
		fail(fn, fmt.Errorf("lock operation %d", int(how)))
	}
	return 0
}
