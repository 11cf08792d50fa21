package main

import (
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

// The collectives on the World's team, timed on every PE in step; size is
// what each PE contributes or receives per member.
func init() {
	register(test{name: "bcast_lat", doc: "broadcast of size bytes from PE 0 to every PE", metric: latency, collective: true,
		run: func(e *env, size int) (float64, error) {
			t := e.w.TeamWorld()
			return e.everyPE(size, 1, func() error { return shmem.Broadcast(t, e.sym[:size], e.local[:size], 0) })
		}})
	register(test{name: "fcollect_lat", doc: "fcollect of size bytes from every PE", metric: latency, collective: true,
		run: func(e *env, size int) (float64, error) {
			return e.withDest(size, func(dest []byte) func() error {
				return func() error { return shmem.FCollect(e.w.TeamWorld(), dest, e.local[:size]) }
			})
		}})
	register(test{name: "collect_lat", doc: "collect (sizes not known in advance) of size bytes from every PE", metric: latency, collective: true,
		run: func(e *env, size int) (float64, error) {
			return e.withDest(size, func(dest []byte) func() error {
				return func() error { return shmem.Collect(e.w.TeamWorld(), dest, e.local[:size]) }
			})
		}})
	register(test{name: "alltoall_lat", doc: "alltoall of size bytes between every pair of PEs", metric: latency, collective: true,
		run: func(e *env, size int) (float64, error) {
			src := make([]byte, size*e.w.NPEs())
			return e.withDest(size, func(dest []byte) func() error {
				return func() error { return shmem.Alltoall(e.w.TeamWorld(), dest, src, size) }
			})
		}})
	register(test{name: "reduce_lat", doc: "sum-reduce of size bytes of int64 (at least one) over every PE", metric: latency, collective: true,
		run: func(e *env, size int) (float64, error) {
			n := max(1, size/8)
			src := mem.Slice[int64](e.local[:n*8])
			dest := make([]int64, n)
			t := e.w.TeamWorld()
			return e.everyPE(size, 1, func() error { return shmem.SumReduce(t, dest, src) })
		}})
}

// withDest times the collective op makes, on a symmetric dest of size
// bytes per PE allocated for it, on every PE.
func (e *env) withDest(size int, op func(dest []byte) func() error) (float64, error) {
	dest, err := shmem.Malloc[byte](e.w, size*e.w.NPEs())
	if err != nil {
		return 0, err
	}
	us, err := e.everyPE(size, e.w.NPEs(), op(dest))
	if ferr := shmem.Free(e.w, dest); err == nil {
		err = ferr
	}
	return us, err
}
