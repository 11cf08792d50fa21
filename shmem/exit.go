package shmem

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/launcher"
)

// The global-exit word lies past the user's heap, in a cache line of its
// own: GlobalExit writes it on every PE, and every blocking call, through
// World.Err, reads it on its own PE.
const (
	exitSize = cacheLine
	exitFlag = uint64(1) << 63
)

// exitState is how GlobalExit ends the job.
type exitState struct {
	// hook, when set, replaces leaving the process; tests use it to run
	// GlobalExit with PEs as goroutines.
	hook func(status int)
	// jobDir is where the launcher looks for a PE's global exit; "" when
	// no launcher started the job.
	jobDir string
}

// WithExitHook makes GlobalExit call f instead of ending the process, and
// then return. The other PEs' blocking calls fail as they would if the
// process had ended; tests use it to exercise GlobalExit with PEs as
// goroutines of one process.
func WithExitHook(f func(status int)) Option { return func(o *options) { o.exitHook = f } }

// GlobalExitError is what blocking calls return once a PE has called
// GlobalExit.
type GlobalExitError struct {
	PE, Status int
}

func (e *GlobalExitError) Error() string {
	return fmt.Sprintf("shmem: PE %d ended the job with global_exit(%d)", e.PE, e.Status)
}

func (e *GlobalExitError) Unwrap() error { return core.ErrClosed }

func (w *World) exitWord() *uint64 { return mem.Word64(w.local, internalSize+w.heapSize) }

// exitErr reports a global exit announced to this PE.
func (w *World) exitErr() error {
	v := atomic.LoadUint64(w.exitWord())
	if v&exitFlag == 0 {
		return nil
	}
	return &GlobalExitError{PE: int(v>>32) &^ (1 << 31), Status: int(int32(uint32(v)))}
}

// GlobalExit ends the whole job with status, from any one PE, without the
// others' cooperation (shmem_global_exit). It tells every PE, whose
// blocking calls then fail with a *GlobalExitError, and leaves the
// process with status (the operating system keeps its low 8 bits); a
// launcher such as oshrun then ends the other PEs and exits with the same
// status. GlobalExit does not return, unless WithExitHook gave Init a
// hook: then it calls the hook and returns the *GlobalExitError that
// every PE of the job now sees.
func (w *World) GlobalExit(status int) error {
	v := exitFlag | uint64(w.me)<<32 | uint64(uint32(int32(status)))
	// Best effort: a PE that cannot be told is ended by the launcher.
	for pe := range w.npes {
		w.def.ep.Atomic(pe, w.heap, internalSize+w.heapSize, core.AtomicWrite, core.Uint64, v)
	}
	w.def.ep.Quiet()
	atomic.CompareAndSwapUint64(w.exitWord(), 0, v)
	w.log.Debug("global exit", "status", status)
	if w.syn.exit.hook != nil {
		w.syn.exit.hook(status)
		return &GlobalExitError{PE: w.me, Status: status}
	}
	if w.syn.exit.jobDir != "" {
		if err := launcher.WriteGlobalExit(w.syn.exit.jobDir, w.me, status); err != nil {
			w.log.Warn("global exit: the launcher will see an ordinary exit", "err", err)
		}
	}
	os.Exit(status)
	return nil
}
