package main

import (
	"runtime"

	"github.com/goshmem/goshmem/capi/cenv"
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

// extraProcs reads GOSHMEM_C_EXTRA_PROCS from lookup (nil: the process
// environment).
func extraProcs(lookup func(string) (string, bool)) (int, error) {
	return cenv.ExtraProcs.Int(lookup, 0, cenv.ExtraProcsMax)
}

// addProcs adds n to GOMAXPROCS for a job whose provider maps no peer's
// memory; caps are the provider's capabilities.
func addProcs(n int, caps core.Caps) {
	if n > 0 && caps&core.CapDirectAccess == 0 {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
	}
}
