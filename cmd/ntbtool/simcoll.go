package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb/sim"
	"github.com/goshmem/goshmem/shmem"
)

// collRow is one collective of shmem's on the ring provider over the
// simulator: the slowest PE's time, the median of collReps.
type collRow struct {
	Protocol string  `json:"protocol"`
	Hosts    int     `json:"hosts"`
	Op       string  `json:"op"`
	Bytes    int     `json:"bytes"`
	Us       float64 `json:"time_us"`
}

const collReps = 5

// collSizes are the collectives' sizes in int64 elements: one, and
// 64 KiB.
var collSizes = []int{1, 8 << 10}

// colls times shmem's broadcast and sum reduction on the world team of
// every ring size.
func (o *simOptions) colls(res *simResult) error {
	for _, proto := range o.protocol {
		for _, n := range o.hosts {
			rows, err := o.collsOn(n, proto)
			if err != nil {
				return fmt.Errorf("a ring of %d hosts (%s): %w", n, proto, err)
			}
			res.Coll = append(res.Coll, rows...)
		}
	}
	return nil
}

func (o *simOptions) collsOn(n int, proto string) ([]collRow, error) {
	simJobs++
	job := fmt.Sprintf("coll-%d-%d", n, simJobs)
	dir, err := os.MkdirTemp("", "ntbsim")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sim.Prepare(job, sim.Config{Hosts: n, Model: o.model, Seed: o.seed})
	defer sim.Unprepare(job)
	env := map[string]string{
		core.EnvShmDir:             dir,
		"GOSHMEM_NTBRING_DEVICE":   "sim",
		"GOSHMEM_NTBRING_PROTOCOL": proto,
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	boots := bootstrap.NewLocal(n)
	ops := []string{"broadcast", "sum_reduce"}
	// took[op][size][rep][pe]
	took := make([][][][]time.Duration, len(ops))
	for i := range took {
		took[i] = make([][][]time.Duration, len(collSizes))
		for j := range took[i] {
			took[i][j] = make([][]time.Duration, collReps)
			for r := range collReps {
				took[i][j][r] = make([]time.Duration, n)
			}
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for pe := range n {
		wg.Go(func() {
			w, err := shmem.Init(shmem.WithBootstrap(boots[pe], job), shmem.WithProvider("ntbring"),
				shmem.WithEnv(lookup), shmem.WithHeapSize(16<<20))
			if err != nil {
				errs[pe] = err
				return
			}
			errs[pe] = errors.Join(collPE(w, pe, took), w.Finalize())
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var rows []collRow
	for i, op := range ops {
		for j, size := range collSizes {
			per := make([]time.Duration, collReps)
			for r := range collReps {
				for _, d := range took[i][j][r] {
					per[r] = max(per[r], d)
				}
			}
			d := medianOf(per)
			rows = append(rows, collRow{Protocol: proto, Hosts: n, Op: op, Bytes: 8 * size, Us: float64(d.Nanoseconds()) / 1e3})
		}
	}
	return rows, nil
}

// collPE is one PE's part: each collective and size collReps times, each
// after a barrier, its time into took.
func collPE(w *shmem.World, pe int, took [][][][]time.Duration) error {
	t := w.TeamWorld()
	for j, size := range collSizes {
		src, err := shmem.Malloc[int64](w, size)
		if err != nil {
			return err
		}
		dst, err := shmem.Malloc[int64](w, size)
		if err != nil {
			return err
		}
		for i := range src {
			src[i] = int64(pe + i)
		}
		for r := range collReps {
			for i, op := range []func() error{
				func() error { return shmem.Broadcast(t, dst, src, 0) },
				func() error { return shmem.SumReduce(t, dst, src) },
			} {
				if err := w.BarrierAll(); err != nil {
					return err
				}
				start := time.Now()
				if err := op(); err != nil {
					return err
				}
				took[i][j][r][pe] = time.Since(start)
			}
		}
		if err := errors.Join(shmem.Free(w, src), shmem.Free(w, dst)); err != nil {
			return err
		}
	}
	return nil
}
