// Command capi is goshmem's C interface, built as a shared library
// (go build -buildmode=c-shared -o lib/libgoshmem.so ./capi) that
// OpenSHMEM C and C++ programs link against through include/shmem.h.
//
// It is a thin binding over package shmem: one Go runtime and one World
// per process. The C side (runtime.c, typed_gen.c, fast.c) keeps what
// every call asks (this PE's number, a team's ranks, the fast path) in C
// and crosses into the exported functions of this package only for what
// needs the Go stack. Handles (shmem_ctx_t, shmem_team_t) are C structs
// naming their Go objects by cgo.Handle.
//
// Most OpenSHMEM routines return nothing, so an error the Go API returns
// ends the job: a message naming the routine on stderr, then a global
// exit with status 1, which makes the launcher end every PE.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -I${SRCDIR} -O2 -Wall
#include <stdio.h>
#include <stdlib.h>
#include "handles.h"
#include "impl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	_ "github.com/goshmem/goshmem/providers/all" // the providers a job may pick
	"github.com/goshmem/goshmem/shmem"
)

func main() {}

// The process's World, set by gshgo_init and cleared by gshgo_finalize.
var world atomic.Pointer[shmem.World]

// ctxEntry is what a context's cgo.Handle names.
type ctxEntry struct {
	c shmem.Ctx
	q interface {
		Quiet() error
		Fence() error
		PEQuiet(pes ...int) error
	}
	team cgo.Handle // of the team it was created on; 0 for SHMEM_TEAM_WORLD's
}

// notRunning explains a call made while there is no World.
func notRunning() error {
	switch C.gsh_state {
	case C.GSH_FINALIZED:
		return errors.New("called after shmem_finalize")
	default:
		return errors.New("called before shmem_init")
	}
}

// theWorld returns the World, or ends the process if there is none.
func theWorld(fn *C.char) *shmem.World {
	w := world.Load()
	if w == nil {
		fail(fn, notRunning())
	}
	return w
}

// failMu is never released: the first failing call of the process speaks
// and ends it, and any other waits here until the process is gone.
var failMu sync.Mutex

// fail ends the job because of err in the routine fn: a message on
// stderr, then a global exit with status 1 that tells the launcher why.
// It does not return. A global exit started by another PE is not this
// PE's error: it follows it quietly with the same status, as the
// launcher expects.
func fail(fn *C.char, err error) {
	failMu.Lock()
	C.fflush(nil) // the program's buffered output, which os.Exit would drop
	var gerr *shmem.GlobalExitError
	if errors.As(err, &gerr) {
		os.Exit(gerr.Status)
	}
	name := "goshmem"
	if fn != nil {
		name = C.GoString(fn)
	}
	fmt.Fprintf(os.Stderr, "goshmem: %s: %v\n", name, err)
	if w := world.Load(); w != nil {
		// The launcher says the library ended the job, and why: the
		// program called no global_exit.
		w.Abort(1, fmt.Sprintf("the goshmem library failed in %s: %v", name, err))
	}
	os.Exit(1)
}

// failf is fail with a message made here.
func failf(fn *C.char, format string, args ...any) {
	fail(fn, fmt.Errorf(format, args...))
}

// check ends the job if err is not nil.
func check(fn *C.char, err error) {
	if err != nil {
		fail(fn, err)
	}
}

// defaultCtx is the default context's handle and what it names, which
// ctxOf answers without the handle table's lookup: most calls are on it.
type defaultCtx struct {
	h C.uintptr_t
	e *ctxEntry
}

var theDefault atomic.Pointer[defaultCtx]

// ctxOf returns the Go side of a C context.
func ctxOf(x *C.struct_gsh_ctx, fn *C.char) *ctxEntry {
	if x == nil {
		fail(fn, errors.New("the context is SHMEM_CTX_INVALID"))
	}
	h := x.h
	if h == 0 {
		fail(fn, notRunning())
	}
	if d := theDefault.Load(); d != nil && d.h == h {
		return d.e
	}
	return cgo.Handle(h).Value().(*ctxEntry)
}

// teamOf returns the Go side of a C team, or nil for SHMEM_TEAM_INVALID.
func teamOf(x *C.struct_gsh_team, fn *C.char) *shmem.Team {
	if x == nil {
		return nil
	}
	if x.h == 0 {
		fail(fn, notRunning())
	}
	return cgo.Handle(x.h).Value().(*shmem.Team)
}

// cbytes views n bytes of C memory at p as a Go slice, without copying:
// symmetric objects are slices aliasing the heap in the Go API, and this
// is how a C pointer becomes one. A NULL p with n > 0 ends the job.
func cbytes(fn *C.char, p unsafe.Pointer, n C.size_t) []byte {
	if n == 0 {
		return nil
	}
	if p == nil {
		failf(fn, "a NULL buffer for %d bytes", uint64(n))
	}
	if uint64(n) > math.MaxInt32*uint64(math.MaxInt32) {
		failf(fn, "%d bytes is more than any buffer", uint64(n))
	}
	return unsafe.Slice((*byte)(p), int(n))
}

// cmul is n elements of size bytes, in bytes, ending the job naming fn
// where the product overflows size_t: unchecked, it would wrap to a short
// buffer.
func cmul(fn *C.char, n, size C.size_t) C.size_t {
	hi, lo := bits.Mul64(uint64(n), uint64(size))
	if hi != 0 {
		failf(fn, "nelems %d of %d-byte elements overflows size_t", uint64(n), uint64(size))
	}
	return C.size_t(lo)
}

// cint converts a C count to int, ending the job if it does not fit.
func cint(fn *C.char, n C.size_t) int {
	if uint64(n) > math.MaxInt {
		failf(fn, "count %d is too large", uint64(n))
	}
	return int(n)
}
