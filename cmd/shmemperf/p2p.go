package main

import "github.com/goshmem/goshmem/shmem"

// The point-to-point tests: PE 0 to e.peer, as in the OSU suite; then the
// collectives (coll.go), so that tables list them in this order.
func init() {
	register(test{name: "put_lat", doc: "putmem then quiet, one at a time", metric: latency,
		run: func(e *env, size int) (float64, error) {
			dst, src := e.sym[:size], e.local[:size]
			return e.fromPE0(size, func() error {
				if err := shmem.PutMem(e.w, dst, src, e.peer); err != nil {
					return err
				}
				return e.w.Quiet()
			})
		}})
	register(test{name: "get_lat", doc: "getmem, one at a time", metric: latency,
		run: func(e *env, size int) (float64, error) {
			dst, src := e.local[:size], e.sym[:size]
			return e.fromPE0(size, func() error { return shmem.GetMem(e.w, dst, src, e.peer) })
		}})
	register(test{name: "put_bw", doc: "a window of non-blocking puts, then quiet", metric: bandwidth,
		run: func(e *env, size int) (float64, error) {
			dst, src := e.sym[:size], e.local[:size]
			return e.windows(size, func(n int) error {
				for range n {
					if err := shmem.PutNBI(e.w, dst, src, e.peer); err != nil {
						return err
					}
				}
				return nil
			})
		}})
	register(test{name: "get_bw", doc: "a window of non-blocking gets, then quiet", metric: bandwidth,
		run: func(e *env, size int) (float64, error) {
			dst, src := e.local[:size], e.sym[:size]
			return e.windows(size, func(n int) error {
				for range n {
					if err := shmem.GetNBI(e.w, dst, src, e.peer); err != nil {
						return err
					}
				}
				return nil
			})
		}})
	register(test{name: "put_rate", doc: "8-byte putmem, a window at a time, then quiet", metric: rate, sizes: []int{8},
		run: func(e *env, size int) (float64, error) {
			dst, src := e.sym[:size], e.local[:size]
			w, peer := e.w, e.peer
			return e.windows(size, func(n int) error {
				for range n {
					if err := shmem.PutMem(w, dst, src, peer); err != nil {
						return err
					}
				}
				return nil
			})
		}})
	register(test{name: "fadd_lat", doc: "64-bit atomic fetch-add", metric: latency, sizes: []int{8},
		run: func(e *env, size int) (float64, error) {
			return e.fromPE0(size, func() error {
				_, err := shmem.AtomicFetchAdd(e.w, e.word, 1, e.peer)
				return err
			})
		}})
	register(test{name: "cswap_lat", doc: "64-bit atomic compare-swap (that succeeds)", metric: latency, sizes: []int{8},
		run: func(e *env, size int) (float64, error) {
			if e.w.MyPE() == 0 {
				if err := shmem.AtomicSet(e.w, e.word, 0, e.peer); err != nil { // fadd_lat left it non-zero
					return 0, err
				}
			}
			return e.fromPE0(size, func() error {
				_, err := shmem.AtomicCompareSwap(e.w, e.word, 0, 0, e.peer)
				return err
			})
		}})
	register(test{name: "finc_lat", doc: "64-bit atomic fetch-increment", metric: latency, sizes: []int{8},
		run: func(e *env, size int) (float64, error) {
			return e.fromPE0(size, func() error {
				_, err := shmem.AtomicFetchInc(e.w, e.word, e.peer)
				return err
			})
		}})
	register(test{name: "fadd32_lat", doc: "32-bit atomic fetch-add", metric: latency, sizes: []int{4},
		run: func(e *env, size int) (float64, error) {
			return e.fromPE0(size, func() error {
				_, err := shmem.AtomicFetchAdd(e.w, e.word32, 1, e.peer)
				return err
			})
		}})
	register(test{name: "finc32_lat", doc: "32-bit atomic fetch-increment", metric: latency, sizes: []int{4},
		run: func(e *env, size int) (float64, error) {
			return e.fromPE0(size, func() error {
				_, err := shmem.AtomicFetchInc(e.w, e.word32, e.peer)
				return err
			})
		}})
	register(test{name: "cswap32_lat", doc: "32-bit atomic compare-swap (that succeeds)", metric: latency, sizes: []int{4},
		run: func(e *env, size int) (float64, error) {
			if e.w.MyPE() == 0 {
				if err := shmem.AtomicSet(e.w, e.word32, 0, e.peer); err != nil { // the tests before left it non-zero
					return 0, err
				}
			}
			return e.fromPE0(size, func() error {
				_, err := shmem.AtomicCompareSwap(e.w, e.word32, 0, 0, e.peer)
				return err
			})
		}})
	register(test{name: "add_rate", doc: "64-bit atomic add, a window at a time, then quiet", metric: rate, sizes: []int{8},
		run: func(e *env, size int) (float64, error) {
			w, word, peer := e.w, e.word, e.peer
			return e.windows(size, func(n int) error {
				for range n {
					if err := shmem.AtomicAdd(w, word, 1, peer); err != nil {
						return err
					}
				}
				return nil
			})
		}})
	registerCollectives()
}
