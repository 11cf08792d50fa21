// Package shmem is OpenSHMEM 1.6 in idiomatic Go, written once against
// core, so a program never knows which provider carries it.
//
//	w, err := shmem.Init()             // join the job oshrun, srun or mpirun started
//	defer w.Finalize()
//	me, n := w.MyPE(), w.NPEs()
//	buf, err := shmem.Malloc[int64](w, 8)  // symmetric: same offset on every PE
//	err = shmem.Put(w, buf, []int64{1, 2}, (me+1)%n)
//	err = w.BarrierAll()
//
// Mapping from the C API: shmem_init is Init and returns a *World, this
// PE's handle on the job (several may live in one process: tests run PEs as
// goroutines). Typed operations are generic functions over the spec's
// types (shmem_long_put is Put[int64]); they take a Ctx, which is either
// the *World (the default context) or a *Context from NewContext.
// Symmetric objects are ordinary slices aliasing the symmetric heap.
// Errors are returned, never signalled; they unwrap to core's sentinels,
// re-exported here (errors.Is(err, shmem.ErrOutOfBounds)).
//
// Lifetimes: as OpenSHMEM 1.6 allows, a program may call Init more than
// once; a later Init returns the same World, counted, and the Finalize
// that balances the first ends it. Finalize is collective and
// idempotent; it destroys the
// contexts, closes the provider's domain and the bootstrap, and leaves no
// goroutine behind. Slices from Malloc are valid until Free or Finalize;
// slices from Ptr until Finalize. Buffers given to PutNBI and GetNBI belong
// to the library until the context's next Quiet.
package shmem

import "github.com/goshmem/goshmem/core"

// The errors every operation may return, by what went wrong; use errors.Is.
var (
	ErrNotSupported = core.ErrNotSupported
	ErrInvalid      = core.ErrInvalid
	ErrOutOfBounds  = core.ErrOutOfBounds
	ErrPeerLost     = core.ErrPeerLost
	ErrTimeout      = core.ErrTimeout
	ErrClosed       = core.ErrClosed
	ErrNoMemory     = core.ErrNoMemory
)
