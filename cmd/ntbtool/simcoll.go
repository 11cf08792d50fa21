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
// simulator: the slowest PE's time, the median of collReps. Bytes is
// what each PE contributes: its source of a broadcast or reduction, its
// block of an fcollect, and what it sends each other PE in an alltoall.
type collRow struct {
	Protocol string  `json:"protocol"`
	Fabric   string  `json:"fabric"`
	Hosts    int     `json:"hosts"`
	Op       string  `json:"op"`
	Bytes    int     `json:"bytes"`
	Us       float64 `json:"time_us"`
}

const collReps = 5

// collOp is one collective at one size, in int64 elements per PE.
type collOp struct {
	op    string
	elems int
}

// collOps are the collectives timed: broadcast, sum reduction, fcollect
// and alltoall of one element and of 8 KiB elements (64 KiB) a PE, and
// the sum reduction of 1 MiB.
var collOps = []collOp{
	{"broadcast", 1}, {"broadcast", 8 << 10},
	{"sum_reduce", 1}, {"sum_reduce", 8 << 10}, {"sum_reduce", 128 << 10},
	{"fcollect", 1}, {"fcollect", 8 << 10},
	{"alltoall", 1}, {"alltoall", 8 << 10},
}

// colls times shmem's collectives on the world team of every fabric
// size.
func (o *simOptions) colls(res *simResult) error {
	for _, fb := range o.fabrics() {
		for _, n := range o.sizes(fb.topo) {
			rows, err := o.collsOn(n, fb)
			if err != nil {
				return fmt.Errorf("a %s of %d hosts (%s): %w", fb.topo, n, fb.proto, err)
			}
			res.Coll = append(res.Coll, rows...)
		}
	}
	return nil
}

func (o *simOptions) collsOn(n int, fb fabric) ([]collRow, error) {
	simJobs++
	job := fmt.Sprintf("coll-%d-%d", n, simJobs)
	dir, err := os.MkdirTemp("", "ntbsim")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	w := width(fb.topo, n)
	sim.Prepare(job, sim.Config{Hosts: n, Width: w, Model: o.model, Seed: o.seed})
	defer sim.Unprepare(job)
	env := map[string]string{
		core.EnvShmDir:             dir,
		"GOSHMEM_NTBRING_DEVICE":   "sim",
		"GOSHMEM_NTBRING_PROTOCOL": fb.proto,
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	boots := bootstrap.NewLocal(n)
	// took[op][rep][pe]
	took := make([][][]time.Duration, len(collOps))
	for i := range took {
		took[i] = make([][]time.Duration, collReps)
		for r := range collReps {
			took[i][r] = make([]time.Duration, n)
		}
	}
	// The largest buffers: an fcollect's or alltoall's n blocks of 64 KiB,
	// twice, and a reduction's 1 MiB, twice.
	heap := 4*n*(64<<10) + 4<<20 + 1<<20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for pe := range n {
		wg.Go(func() {
			w, err := shmem.Init(shmem.WithBootstrap(boots[pe], job), shmem.WithProvider("ntbring"),
				shmem.WithEnv(lookup), shmem.WithHeapSize(int64(heap)))
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
	for i, c := range collOps {
		per := make([]time.Duration, collReps)
		for r := range collReps {
			for _, d := range took[i][r] {
				per[r] = max(per[r], d)
			}
		}
		d := medianOf(per)
		rows = append(rows, collRow{Protocol: fb.proto, Fabric: sim.TopologyName(w, n), Hosts: n, Op: c.op, Bytes: 8 * c.elems, Us: float64(d.Nanoseconds()) / 1e3})
	}
	return rows, nil
}

// collPE is one PE's part: each collective collReps times, each after a
// barrier, its time into took.
func collPE(w *shmem.World, pe int, took [][][]time.Duration) error {
	t := w.TeamWorld()
	n := w.NPEs()
	for i, c := range collOps {
		srcLen, dstLen := c.elems, c.elems
		switch c.op {
		case "fcollect":
			dstLen = n * c.elems
		case "alltoall":
			srcLen, dstLen = n*c.elems, n*c.elems
		}
		src, err := shmem.Malloc[int64](w, srcLen)
		if err != nil {
			return err
		}
		dst, err := shmem.Malloc[int64](w, dstLen)
		if err != nil {
			return err
		}
		for k := range src {
			src[k] = int64(pe + k)
		}
		op := func() error {
			switch c.op {
			case "broadcast":
				return shmem.Broadcast(t, dst, src, 0)
			case "sum_reduce":
				return shmem.SumReduce(t, dst, src)
			case "fcollect":
				return shmem.FCollect(t, dst, src)
			}
			return shmem.Alltoall(t, dst, src, c.elems)
		}
		for r := range collReps {
			if err := w.BarrierAll(); err != nil {
				return err
			}
			start := time.Now()
			if err := op(); err != nil {
				return fmt.Errorf("%s of %d elements: %w", c.op, c.elems, err)
			}
			took[i][r][pe] = time.Since(start)
		}
		if err := errors.Join(shmem.Free(w, src), shmem.Free(w, dst)); err != nil {
			return err
		}
	}
	return nil
}
