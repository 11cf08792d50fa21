package main

/*
#include <stdlib.h>
#include "handles.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime/cgo"
	"unsafe"

	"github.com/goshmem/goshmem/shmem"
)

// shmem.h's version is shmem's: a difference fails the build.
const (
	_ = uint(C.SHMEM_MAJOR_VERSION-shmem.MajorVersion) + uint(shmem.MajorVersion-C.SHMEM_MAJOR_VERSION)
	_ = uint(C.SHMEM_MINOR_VERSION-shmem.MinorVersion) + uint(shmem.MinorVersion-C.SHMEM_MINOR_VERSION)
)

// threadLevel maps SHMEM_THREAD_* to the Go levels; ok is false for a
// value that is none of them.
func threadLevel(l C.int) (shmem.ThreadLevel, bool) {
	switch l {
	case C.SHMEM_THREAD_SINGLE:
		return shmem.ThreadSingle, true
	case C.SHMEM_THREAD_FUNNELED:
		return shmem.ThreadFunneled, true
	case C.SHMEM_THREAD_SERIALIZED:
		return shmem.ThreadSerialized, true
	case C.SHMEM_THREAD_MULTIPLE:
		return shmem.ThreadMultiple, true
	}
	return 0, false
}

func cThreadLevel(l shmem.ThreadLevel) C.int {
	switch l {
	case shmem.ThreadSingle:
		return C.SHMEM_THREAD_SINGLE
	case shmem.ThreadFunneled:
		return C.SHMEM_THREAD_FUNNELED
	case shmem.ThreadSerialized:
		return C.SHMEM_THREAD_SERIALIZED
	}
	return C.SHMEM_THREAD_MULTIPLE
}

// staticData returns the Init option that makes seg, the program's data
// and bss (page-aligned, found by runtime.c), a symmetric segment: the
// specification makes global and static variables symmetric.
func staticData(seg []byte) []shmem.Option {
	return []shmem.Option{shmem.WithStaticData(seg)}
}

// gshgo_init joins the job (shmem_init, shmem_init_thread). requested is
// a SHMEM_THREAD_* level, or -1 for shmem_init's default. It fills the
// predefined handles and returns 0, or prints why it failed and returns
// nonzero.
//
//export gshgo_init
func gshgo_init(requested C.int, provided *C.int, staticBase unsafe.Pointer, staticLen C.size_t, fn *C.char) C.int {
	if w := world.Load(); w != nil {
		// A later shmem_init or shmem_init_thread: shmem.Init counts it
		// and returns the same World, and the thread level stays the
		// one the first call was given.
		again, err := shmem.Init()
		if err != nil || again != w {
			fmt.Fprintf(os.Stderr, "goshmem: %s: the library is initialized, but not as this process's job: %v\n", C.GoString(fn), err)
			return 1
		}
		if provided != nil {
			*provided = cThreadLevel(w.QueryThread())
		}
		return 0
	}
	// Every call from C runs on a goroutine locked to the C thread.
	// The job's environment is the C program's (cEnv).
	opts := []shmem.Option{shmem.WithLockedCallers(), shmem.WithEnv(cEnv)}
	if requested >= 0 {
		l, ok := threadLevel(requested)
		if !ok {
			fmt.Fprintf(os.Stderr, "goshmem: %s: %d is not a thread level (SHMEM_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE)\n",
				C.GoString(fn), int(requested))
			return 1
		}
		opts = append(opts, shmem.WithThreadLevel(l))
	}
	if staticBase != nil && staticLen > 0 {
		opts = append(opts, staticData(cbytes(fn, staticBase, staticLen))...)
	}
	extra, err := readSettings()
	if err != nil {
		fmt.Fprintf(os.Stderr, "goshmem: %s: %v\n", C.GoString(fn), err)
		return 1
	}
	w, err := shmem.Init(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "goshmem: %s: %v\n", C.GoString(fn), err)
		return 1
	}
	// After Init, so the provider and shmem size their polling and
	// spinning as for a Go PE.
	addProcs(extra, w.ProviderInfo().Caps)
	def := &ctxEntry{c: w, q: w}
	C.gsh_ctx_default.h = C.uintptr_t(cgo.NewHandle(def))
	theDefault.Store(&defaultCtx{h: C.gsh_ctx_default.h, e: def})
	fillTeam(&C.gsh_team_world, w.TeamWorld())
	fillTeam(&C.gsh_team_shared, w.TeamShared())
	C.gsh_my_pe_cached, C.gsh_n_pes_cached = C.int(w.MyPE()), C.int(w.NPEs())
	world.Store(w)
	if provided != nil {
		*provided = cThreadLevel(w.QueryThread())
	}
	return 0
}

// gshgo_query_initialized is shmem_query_initialized: 1 while the
// library is initialized, else 0, at any time.
//
//export gshgo_query_initialized
func gshgo_query_initialized() C.int {
	if shmem.Initialized() {
		return 1
	}
	return 0
}

// gshgo_query_thread is shmem_query_thread.
//
//export gshgo_query_thread
func gshgo_query_thread(fn *C.char) C.int {
	return cThreadLevel(theWorld(fn).QueryThread())
}

// gshgo_finalize leaves the job (shmem_finalize). The C side has
// destroyed the program's teams and contexts' C halves already; Finalize
// destroys their Go halves.
//
//export gshgo_finalize
func gshgo_finalize(fn *C.char) {
	w := theWorld(fn)
	check(fn, w.Finalize())
	if w.Initialized() {
		return // not the last: shmem.Finalize only counted it
	}
	world.Store(nil)
	theDefault.Store(nil)
	if h := C.gsh_ctx_default.h; h != 0 {
		cgo.Handle(h).Delete()
		C.gsh_ctx_default.h = 0
	}
	for _, t := range []*C.struct_gsh_team{&C.gsh_team_world, &C.gsh_team_shared} {
		if t.h != 0 {
			cgo.Handle(t.h).Delete()
			t.h = 0
		}
	}
	handles.forget()
}

// gshgo_inits is how many shmem_init and shmem_init_thread calls no
// shmem_finalize has balanced yet: shmem_finalize ends the library only
// at the last.
//
//export gshgo_inits
func gshgo_inits() C.int {
	if w := world.Load(); w != nil {
		return C.int(w.InitCount())
	}
	return 0
}

// gshgo_global_exit is shmem_global_exit: it does not return.
//
//export gshgo_global_exit
func gshgo_global_exit(status C.int) {
	w := world.Load()
	if w == nil {
		os.Exit(int(status))
	}
	w.GlobalExit(int(status))
	os.Exit(int(status))
}

// gshgo_fail is the C side's way to end the job with a message.
//
//export gshgo_fail
func gshgo_fail(fn, msg *C.char) {
	fail(fn, errors.New(C.GoString(msg)))
}
