package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// checkRounds is how many times the self-test repeats each timed operation.
const checkRounds = 1000

// checkTimeout bounds the whole self-test: a provider that hangs fails it.
const checkTimeout = time.Minute

// step is one line of the self-test's report.
type step struct {
	name string
	took time.Duration // per operation for the timed steps
	per  bool          // took is per operation
	err  error
}

// selfCheck is the quick self-test of one provider, in the spirit of
// fi_pingpong: two PEs, goroutines of this process joined by the
// in-process bootstrap, open a domain and a region; PE 0 puts to PE 1 and
// quiets, gets the value back, and fetch-adds on a word of PE 1's, each
// checkRounds times; then PE 1 checks what landed in its memory. It
// prints one line per step with its time and returns the first failure.
func selfCheck(w io.Writer, p core.Provider) error {
	dir, err := os.MkdirTemp("", "provinfo-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return dir, true
		}
		return os.LookupEnv(k)
	}
	id := make([]byte, 6)
	rand.Read(id)
	job := "check-" + hex.EncodeToString(id)

	boots := bootstrap.NewLocal(2)
	steps := make(chan step, 16)
	var wg sync.WaitGroup
	for rank := range 2 {
		wg.Go(func() {
			b := boots[rank]
			if err := checkPE(p, &core.Config{Bootstrap: b, JobID: job, Env: env}, steps); err != nil {
				b.Kill() // the other PE stops waiting for this one
				steps <- step{name: fmt.Sprintf("PE %d", rank), err: err}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "self-test of %s (%s), 2 PEs in this process\n", p.Name(), p.Info().Origin)
	fmt.Fprintln(tw, "STEP\tRESULT\tTIME")
	var first error
	report := func(s step) {
		res, t := "ok", s.took.Round(time.Microsecond).String()
		if s.per {
			t = fmt.Sprintf("%.2fµs/op", float64(s.took.Nanoseconds())/1e3)
		}
		if s.err != nil {
			res, t = "FAIL: "+s.err.Error(), "-"
			first = cmpOr(first, fmt.Errorf("%s: %w", s.name, s.err))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.name, res, t)
	}
	timeout := time.After(checkTimeout)
wait:
	for {
		select {
		case s := <-steps:
			report(s)
		case <-done:
			break wait
		case <-timeout:
			first = cmpOr(first, fmt.Errorf("no answer within %v: %w", checkTimeout, core.ErrTimeout))
			report(step{name: "wait", err: first})
			break wait
		}
	}
	for len(steps) > 0 {
		report(<-steps)
	}
	if first == nil {
		fmt.Fprintln(tw, "PASS")
	} else {
		fmt.Fprintln(tw, "FAIL")
	}
	return errors.Join(first, tw.Flush())
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// checkPE is one PE of the self-test. PE 0 reports the timed steps.
func checkPE(p core.Provider, cfg *core.Config, steps chan<- step) error {
	rank := cfg.Bootstrap.Rank()
	timed := func(name string, n int, f func() error) error {
		start := time.Now()
		err := f()
		if rank == 0 {
			s := step{name: name, took: time.Since(start), err: err}
			if n > 1 {
				s.took /= time.Duration(n)
				s.per = true
			}
			steps <- s
		}
		return err
	}
	var d core.Domain
	if err := timed("open", 1, func() (err error) { d, err = p.Open(cfg); return err }); err != nil {
		return nil
	}
	defer d.Close()
	var r core.Region
	if err := timed("new region", 1, func() (err error) { r, err = d.NewRegion(4096); return err }); err != nil {
		return nil
	}
	// PE 0 tells PE 1 whether its part went well; only then is PE 1's
	// memory worth checking.
	failed := []byte{0}
	if rank == 0 && pingpong(d, r, timed) != nil {
		failed[0] = 1
	}
	all, err := cfg.Bootstrap.Allgather(failed)
	if err != nil {
		return err
	}
	if rank == 1 && all[0][0] == 0 {
		local := r.Local()
		if v := binary.NativeEndian.Uint64(local[8:]); v != checkRounds {
			return fmt.Errorf("PE 1's counter is %d after %d fetch-adds", v, checkRounds)
		}
	}
	return timed("close", 1, d.Close)
}

// pingpong is PE 0's part: put, get and fetch-add to PE 1, checked.
func pingpong(d core.Domain, r core.Region, timed func(string, int, func() error) error) error {
	e, err := d.NewEndpoint(core.EndpointOptions{})
	if err != nil {
		return timed("new endpoint", 1, func() error { return err })
	}
	defer e.Close()
	src, dst := make([]byte, 8), make([]byte, 8)
	err = timed("put 8B + quiet", checkRounds, func() error {
		for i := range checkRounds {
			binary.NativeEndian.PutUint64(src, uint64(i))
			if err := e.Put(1, r, 0, src); err != nil {
				return err
			}
			if err := e.Quiet(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = timed("get 8B", checkRounds, func() error {
		for range checkRounds {
			if err := e.Get(1, r, 0, dst); err != nil {
				return err
			}
			if v := binary.NativeEndian.Uint64(dst); v != checkRounds-1 {
				return fmt.Errorf("got %d back, put %d", v, checkRounds-1)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return timed("fetch-add 8B", checkRounds, func() error {
		for i := range checkRounds {
			old, err := e.FetchAtomic(1, r, 8, core.AtomicAdd, core.Uint64, 1, 0)
			if err != nil {
				return err
			}
			if old != uint64(i) {
				return fmt.Errorf("fetch-add %d returned %d", i, old)
			}
		}
		return e.Quiet()
	})
}
