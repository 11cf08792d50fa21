package main

import (
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// env is what a test runs with.
type env struct {
	w      *shmem.World
	peer   int    // the PE that PE 0 addresses: 1, or 0 in a job of one
	sym    []byte // symmetric, as large as the largest size
	local  []byte // private, as large as the largest size
	word   *int64 // a symmetric 64-bit word for the atomics
	word32 *int32 // and a 32-bit one
	iters  int
	warmup int
	window int
	// largest is the largest size of the job's tests.
	largest int
	// coll holds the collectives' buffers once a collective has run.
	coll *collBufs
	// wrong lists the collectives' wrong results (see check).
	wrong []string
}

// byteBudget bounds the bytes one measurement moves, so large sizes take
// fewer iterations: -iters of 4 MiB would take minutes.
const byteBudget = 512 << 20

// minIters is the fewest iterations a measurement takes, however large
// the size.
const minIters = 20

// counts scales -warmup and -iters for operations of size bytes, which
// are per bytes of work: operations of large sizes take fewer iterations,
// and a call that does per operations counts as that many.
func (e *env) counts(size, per int) (warmup, iters int) {
	scale := func(n int) int {
		if size > 0 && n*size > byteBudget {
			n = max(minIters, byteBudget/size)
		}
		return max(1, n/per)
	}
	return scale(e.warmup), scale(e.iters)
}

// fromPE0 times op on PE 0 alone while the other PEs wait in a barrier, and
// returns the microseconds per call.
func (e *env) fromPE0(size int, op func() error) (float64, error) {
	return e.timePE0(size, 1, op)
}

func (e *env) timePE0(size, per int, op func() error) (float64, error) {
	var us float64
	if e.w.MyPE() == 0 {
		warmup, iters := e.counts(size, per)
		var err error
		if us, err = timeLoop(warmup, iters, op); err != nil {
			return 0, err
		}
	}
	return us, e.w.BarrierAll()
}

// everyPE times op on every PE, in step, and returns PE 0's microseconds
// per call. Every call counts as per operations of -iters, so a slow
// collective can take fewer iterations.
func (e *env) everyPE(size, per int, op func() error) (float64, error) {
	if err := e.w.BarrierAll(); err != nil {
		return 0, err
	}
	warmup, iters := e.counts(size, per)
	return timeLoop(warmup, iters, op)
}

// windows times, on PE 0, windows of -window operations followed by a
// quiet, and returns the microseconds per operation. issue issues n
// operations in a loop of its own, as the C peer does, so the figure holds
// no call per operation that the operation itself does not make.
func (e *env) windows(size int, issue func(n int) error) (float64, error) {
	win := max(1, e.window)
	us, err := e.timePE0(size, win, func() error {
		if err := issue(win); err != nil {
			return err
		}
		return e.w.Quiet()
	})
	return us / float64(win), err
}

// timeLoop runs op warmup times, then iters times under the clock, and
// returns the microseconds per call.
func timeLoop(warmup, iters int, op func() error) (float64, error) {
	for range warmup {
		if err := op(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for range iters {
		if err := op(); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(iters), nil
}

// perSecond converts microseconds per operation of size bytes into the
// metric m.
func perSecond(m metric, us float64, size int) float64 {
	switch m {
	case bandwidth:
		return float64(size) / us // bytes per microsecond is 10^6 bytes per second
	case rate:
		return 1 / us // operations per microsecond is 10^6 per second
	}
	return us
}
