package main

import (
	"fmt"
	"runtime"
	"strconv"

	"github.com/goshmem/goshmem/core"
)

// A runtime processor for the program's threads. A C thread that calls
// into Go takes a runtime processor (a P) and, when the call returns,
// keeps it marked as in a system call while the program runs C code. The
// runtime takes such a P back only when it stays in that state for a
// while, and a program that calls in again and again never does: the
// goroutines a call woke (a connection's writer, the reader that counts
// acknowledgements) wait in its queue until the program blocks in a call.
// A Go program's goroutine yields its P at each such point instead. So
// where peers' memory is not mapped, and the providers' goroutines carry
// the traffic, GOSHMEM_C_EXTRA_PROCS gives a C program that many runtime
// processors beyond what the launcher gives every PE (GOMAXPROCS). Over
// tcp on a loaded 2-CPU host one more doubled 8-byte put bandwidth but
// made 8-byte put+quiet slower (a thread more wakes for each wait), so it
// is off by default: a program that streams small puts turns it on.
// Where peers are mapped, the fast path does the work in C and it has no
// effect.

const (
	extraProcsEnv     = "GOSHMEM_C_EXTRA_PROCS"
	extraProcsDefault = 0
	extraProcsMax     = 64
)

// extraProcs reads extraProcsEnv's value v (set says whether it is in the
// environment).
func extraProcs(v string, set bool) (int, error) {
	if !set || v == "" {
		return extraProcsDefault, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > extraProcsMax {
		return 0, fmt.Errorf("%s=%q: want a whole number of runtime processors from 0 to %d (default %d)",
			extraProcsEnv, v, extraProcsMax, extraProcsDefault)
	}
	return n, nil
}

// addProcs adds n to GOMAXPROCS for a job whose provider maps no peer's
// memory; caps are the provider's capabilities.
func addProcs(n int, caps core.Caps) {
	if n > 0 && caps&core.CapDirectAccess == 0 {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
	}
}
