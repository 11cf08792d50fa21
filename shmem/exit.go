package shmem

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/globalexit"
	"github.com/goshmem/goshmem/internal/mem"
)

// The global-exit word lies past the user's heap, in a cache line of its
// own: GlobalExit writes it on every PE, and every blocking call, through
// World.Err, reads it on its own PE. The next line says what this PE
// waits in (doing.go), and the lines after it hold the finalize bitmap
// (leave.go).
const exitFlag = uint64(1) << 63

// exitSize is the bytes of the exit word's line, the doing line and the
// finalize bitmap, in a job of npes PEs.
func exitSize(npes int) int { return 2*cacheLine + leftSize(npes) }

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

func exitValue(pe, status int) uint64 {
	return exitFlag | uint64(pe)<<32 | uint64(uint32(int32(status)))
}

// exitErr reports a global exit announced to this PE.
func (w *World) exitErr() error {
	v := atomic.LoadUint64(w.exitWord())
	if v&exitFlag == 0 {
		return nil
	}
	return &GlobalExitError{PE: int(v>>32) &^ (1 << 31), Status: int(int32(uint32(v)))}
}

// exitOr returns the global exit in place of err when err says a peer is
// gone and a global exit explains it. A peer leaves after a global exit:
// the caller exits once it has told every PE, and the others leave as
// they learn of it, so a PE may see a peer go before the news reaches
// it. The launcher's record is written before any PE is told, so where
// this PE can read it (on the caller's host) it settles the question even
// then. The exit is kept, so later calls report it too.
func (w *World) exitOr(err error) error {
	if err == nil || !(errors.Is(err, core.ErrPeerLost) || errors.Is(err, core.ErrClosed) || errors.Is(err, core.ErrTimeout)) {
		return err
	}
	var gerr *GlobalExitError
	if errors.As(err, &gerr) {
		return err
	}
	select {
	case <-w.closed:
		return err // the heap that holds the exit word is gone
	default:
	}
	if xerr := w.exitErr(); xerr != nil {
		return xerr
	}
	if w.syn.exit.jobDir == "" {
		return err
	}
	pe, status, ok := globalexit.Read(w.syn.exit.jobDir)
	if !ok {
		return err
	}
	atomic.CompareAndSwapUint64(w.exitWord(), 0, exitValue(pe, status))
	return w.exitErr()
}

// GlobalExit ends the whole job with status, from any one PE, without the
// others' cooperation (shmem_global_exit). It tells every PE, whose
// blocking calls then fail with a *GlobalExitError, and leaves the
// process with status (the operating system keeps its low 8 bits); a
// launcher such as oshrun then ends the other PEs and exits with the same
// status. GlobalExit does not return, unless WithExitHook gave Init a
// hook: then it calls the hook and returns the *GlobalExitError that
// every PE of the job now sees.
func (w *World) GlobalExit(status int) error { return w.exit(status, "") }

// Abort ends the whole job with status as GlobalExit does, because of an
// error that reason explains rather than a call to global_exit: the
// launcher (oshrun) reports the reason, not a global_exit nobody called.
// The C library ends the job so when a routine that cannot return an
// error fails. Like GlobalExit it does not return unless WithExitHook
// gave Init a hook.
func (w *World) Abort(status int, reason string) error { return w.exit(status, reason) }

func (w *World) exit(status int, reason string) error {
	// The launcher's record comes first: a PE told of the exit may leave
	// at once, and the launcher must then know that the job ends by this
	// exit rather than by that PE's leaving; the PEs on its host read the
	// record too when a peer vanishes before the news reaches them.
	if w.syn.exit.hook == nil && w.syn.exit.jobDir != "" {
		if err := globalexit.WriteReason(w.syn.exit.jobDir, w.me, status, reason); err != nil {
			w.log.Warn("global exit: the launcher will see an ordinary exit", "err", err)
		}
	}
	v := exitValue(w.me, status)
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
	// A launcher that can be asked to (PMIx) ends the others itself,
	// and exits with status, as oshrun does from the record above.
	if a, ok := w.boot.(core.JobAborter); ok {
		msg := reason
		if msg == "" {
			msg = fmt.Sprintf("goshmem: PE %d called global exit with status %d", w.me, status)
		}
		a.AbortJob(status, msg)
	}
	os.Exit(status)
	return nil
}
