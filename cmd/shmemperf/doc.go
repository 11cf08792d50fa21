// Command shmemperf measures OpenSHMEM operations in the manner of the OSU
// micro-benchmarks, over whichever provider the job runs on. It is launched
// like any OpenSHMEM program:
//
//	./bin/oshrun -np 2 ./bin/shmemperf -test put_lat,get_lat
//	./bin/oshrun -np 2 ./bin/shmemperf -test all -json > ours.jsonl
//	./bin/shmemperf -plot cmp.svg -from peer.jsonl,ours.jsonl
//
// PE 0 issues the operations to PE 1 (to itself in a job of one PE) while
// the other PEs wait in a barrier; barrier and the collectives run on every
// PE. PE 0 prints the results.
//
// Tests: put_lat (putmem then quiet), get_lat (getmem), put_bw and get_bw
// (a -window of non-blocking transfers, then quiet), put_rate (8-byte
// putmem, -window at a time, then quiet), fadd_lat, finc_lat and
// cswap_lat (64-bit fetch-add, fetch-increment and compare-swap) and
// fadd32_lat, finc32_lat and cswap32_lat (the same on 32 bits), add_rate (64-bit add, -window at a time,
// then quiet), the barriers and syncs (barrier: barrier_all, sync_all,
// set_barrier: the active-set barrier with pSync, team_sync: the World's
// team's Sync) and the collectives broadcast, fcollect, collect, alltoall,
// alltoalls and sum-reduce, each in its two forms: the active-set routine
// with pSync and pWrk under the plain name (bcast_lat) and the team
// routine on the World's team under the name with team_ in front
// (team_bcast_lat); -test list prints them. The names are those of
// bench/peer/shmemperf.c, the same tests in C, so that either program can
// be compared with the other; set_sync, the active-set sync, which package
// shmem lacks, is reported as unavailable.
//
// Output is a table, or with -json one object per result line with exactly
// the keys test, provider, npes, size and one of latency_us (microseconds
// per operation), bandwidth_MBps (10^6 bytes per second) or rate_Mops
// (10^6 operations per second). -plot FILE.svg or FILE.png draws latency
// and bandwidth against size, one line per test and provider: of this
// run, or, with -from, of JSON lines files written earlier, such as the
// peer program's in bench/peer, so both can be drawn together.
//
// # Adding tests
//
// A test is a value of type test registered, from p2p.go's init function
// or a function it calls (registerCollectives in coll.go), in the order
// tables list them:
//
//	func registerMine() {
//		register(test{
//			name:   "broadcast",
//			doc:    "broadcast from PE 0 to every PE",
//			metric: latency,
//			run: func(e *env, size int) (float64, error) {
//				return e.everyPE(size, 1, func() error { ... one broadcast of size bytes ... })
//			},
//		})
//	}
//
// run is called on every PE with the same size (every size of -sizes, or
// only those of the test's sizes field when set) and returns the
// microseconds one operation took; shmemperf turns that into the metric's
// figure, and reports PE 0's. env gives the World, a symmetric buffer
// and a local one of the largest size (e.sym, e.local), the partner PE
// (e.peer) and helpers that time a loop: e.fromPE0 (PE 0 alone, the others
// wait), e.everyPE (all PEs), e.eachCall (all PEs, each call timed alone
// with an untimed step after it; the slowest PE's mean) and e.windows
// (-window operations, then quiet).
package main
