// Package cenv declares the environment variables of the C library
// (capi) and of its compiler wrapper (oshcc) in the settings registry
// (core.Declare). Both are main packages, which no other package can
// import; declared here, the variables are listed by provinfo -e and the
// README with the others.
package cenv

import "github.com/goshmem/goshmem/core"

// ExtraProcsMax bounds GOSHMEM_C_EXTRA_PROCS.
const ExtraProcsMax = 64

// The C library's variables, read once at shmem_init; the C code reads
// what Go parsed, never the environment.
var (
	Defer = declare("capi", core.Param{Env: "GOSHMEM_C_DEFER", Kind: core.KindBool, Default: "1",
		Help: "where peers' memory is not mapped (tcp, ntbring), a C program's small puts (up to 64 bytes) and non-blocking transfers (up to 8 KiB) on the default context wait in C and enter Go together at the next quiet, fence or waiting call: put+quiet is one call into Go, not two; off sends each at once"})
	Window = declare("capi", core.Param{Env: "GOSHMEM_C_WINDOW", Kind: core.KindBool, Default: "1",
		Help: "over ntbring, a C program's puts and p of up to 4 KiB to a neighbour host are stores through the link's window done in C, entering Go only when a landed notice is due (providers/ntbring/PROTOCOL.md); off sends them through Go"})
	FastPath = declare("capi", core.Param{Env: "GOSHMEM_C_FAST_PATH", Kind: core.KindBool, Default: "1",
		Help: "over loopback, a C program's RMA and atomics run in C on the mapped memory; off sends this PE's through Go (the barrier and quiet stay in C), to measure what that saves"})
	ExtraProcs = declare("capi", core.Param{Env: "GOSHMEM_C_EXTRA_PROCS", Kind: core.KindInt, Default: "0",
		Help: "runtime processors a C program's library adds to GOMAXPROCS where peers' memory is not mapped (tcp, ntbring), so the providers' goroutines run while the program's threads run C code: more small-put bandwidth, slower small put+quiet (0 to 64)"})
)

// oshcc's variables.
var (
	Prefix = declare("cmd/oshcc", core.Param{Env: "GOSHMEM_PREFIX", Default: "(the directory above oshcc's)",
		Help: "oshcc and oshc++: the installation whose include and lib directories hold shmem.h and libgoshmem.so"})
	CC = declare("cmd/oshcc", core.Param{Env: "GOSHMEM_CC", Default: "cc",
		Help: "oshcc: the C compiler it runs"})
	CXX = declare("cmd/oshcc", core.Param{Env: "GOSHMEM_CXX", Default: "c++",
		Help: "oshc++: the C++ compiler it runs"})
)

func declare(owner string, p core.Param) core.Param {
	p.Owner = owner
	return core.Declare(p)[0]
}
