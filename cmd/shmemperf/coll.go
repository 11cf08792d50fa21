package main

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// The barriers, the syncs and the collectives, each in both of its forms
// where package shmem has both: the OpenSHMEM 1.4 active-set routine with
// pSync (and pWrk), under the plain name (bcast_lat: BroadcastActiveSet,
// shmem_broadcast64 in C), and the 1.5 team routine on the World's team,
// under the name with team_ in front (team_bcast_lat: Broadcast). The
// names are bench/peer/shmemperf.c's, so that the C program and this one
// can be paired. They run on every PE, in step; the collectives move
// words(size) 64-bit elements per PE and per member, and each is checked
// once per size, untimed, before it is measured.
//
// The active-set collectives alternate between two pSync (and pWrk)
// arrays. OpenSHMEM 1.4 lets a pSync be reused once no member is still in
// the call that used it last: a collective that no member can leave
// before every member has entered it (barrier, collect, fcollect,
// alltoall, alltoalls, the reductions) guarantees that for the call
// before it, so calls can follow each other. A broadcast does not: the
// root may leave as soon as its data is sent. So both forms of broadcast
// are followed by an untimed BarrierAll, each call is timed alone, and
// the figure is the slowest PE's mean time in the call.

// registerCollectives registers the barriers, syncs and collectives, after
// the point-to-point tests.
func registerCollectives() {
	// A barrier costs thousands of small puts on many PEs: each counts as
	// 10 operations of -iters.
	const syncPer = 10
	register(test{name: "barrier", doc: "barrier_all on every PE", metric: latency, sizes: []int{0},
		run: func(e *env, size int) (float64, error) { return e.everyPE(size, syncPer, e.w.BarrierAll) }})
	register(test{name: "sync_all", doc: "sync_all on every PE", metric: latency, sizes: []int{0},
		run: func(e *env, size int) (float64, error) { return e.everyPE(size, syncPer, e.w.SyncAll) }})
	register(test{name: "set_barrier", doc: "barrier on the active set of every PE (BarrierActiveSet)", metric: latency, sizes: []int{0},
		run: func(e *env, size int) (float64, error) {
			c, err := e.collBuffers()
			if err != nil {
				return 0, err
			}
			as := e.everyone()
			return e.everyPE(size, syncPer, func() error {
				pSync, _ := c.next()
				return e.w.BarrierActiveSet(as, pSync)
			})
		}})
	register(test{name: "set_sync", doc: "sync on the active set of every PE (shmem_sync with pSync)", metric: latency, sizes: []int{0},
		unavailable: "package shmem has no active-set sync"})
	register(test{name: "team_sync", doc: "Sync on the World's team", metric: latency, sizes: []int{0}, activeSet: "set_sync",
		run: func(e *env, size int) (float64, error) { return e.everyPE(size, syncPer, e.w.TeamWorld().Sync) }})

	for _, k := range collectives {
		for _, team := range []bool{false, true} {
			t := test{name: k.name, doc: k.doc + " (" + k.setCall + ")", metric: latency, collective: true}
			mk := k.set
			if team {
				t.name, t.doc, t.activeSet, mk = "team_"+k.name, k.doc+" ("+k.teamCall+")", k.name, k.team
			}
			t.run = func(e *env, size int) (float64, error) { return e.collective(k, mk, size, t.name) }
			register(t)
		}
	}
}

// kind is what a collective computes, for the check before it is measured.
type kind int

const (
	bcastKind    kind = iota // PE 0's source in every other PE's dest
	gatherKind               // every PE's source, in PE order, in every dest
	alltoallKind             // block j of PE i's source in block i of PE j's dest
	reduceKind               // the sum of every PE's source in every dest
)

// collective is one collective in its two forms. set and team return the
// operation that moves n elements per PE, in the active-set form and in
// the team form.
type collective struct {
	name, doc         string
	setCall, teamCall string
	kind              kind
	spread            bool // every PE's data reaches every PE: a call counts as NPEs operations
	set, team         func(e *env, c *collBufs, n int) func() error
}

var collectives = []collective{
	{name: "bcast_lat", doc: "broadcast of size bytes from PE 0 to every PE", setCall: "BroadcastActiveSet", teamCall: "Broadcast", kind: bcastKind,
		set: func(e *env, c *collBufs, n int) func() error {
			as := e.everyone()
			return func() error {
				pSync, _ := c.next()
				return shmem.BroadcastActiveSet(e.w, c.dst[:n], c.src[:n], 0, as, pSync)
			}
		},
		team: func(e *env, c *collBufs, n int) func() error {
			t := e.w.TeamWorld()
			return func() error { return shmem.Broadcast(t, c.dst[:n], c.src[:n], 0) }
		}},
	{name: "fcollect_lat", doc: "fcollect of size bytes from every PE", setCall: "FCollectActiveSet", teamCall: "FCollect", kind: gatherKind, spread: true,
		set: func(e *env, c *collBufs, n int) func() error {
			as := e.everyone()
			return func() error {
				pSync, _ := c.next()
				return shmem.FCollectActiveSet(e.w, c.dst[:n*as.Size], c.src[:n], as, pSync)
			}
		},
		team: func(e *env, c *collBufs, n int) func() error {
			t := e.w.TeamWorld()
			return func() error { return shmem.FCollect(t, c.dst[:n*t.NPEs()], c.src[:n]) }
		}},
	{name: "collect_lat", doc: "collect (sizes not known in advance) of size bytes from every PE", setCall: "CollectActiveSet", teamCall: "Collect",
		kind: gatherKind, spread: true,
		set: func(e *env, c *collBufs, n int) func() error {
			as := e.everyone()
			return func() error {
				pSync, _ := c.next()
				return shmem.CollectActiveSet(e.w, c.dst[:n*as.Size], c.src[:n], as, pSync)
			}
		},
		team: func(e *env, c *collBufs, n int) func() error {
			t := e.w.TeamWorld()
			return func() error { return shmem.Collect(t, c.dst[:n*t.NPEs()], c.src[:n]) }
		}},
	{name: "alltoall_lat", doc: "alltoall of size bytes between every pair of PEs", setCall: "AlltoallActiveSet", teamCall: "Alltoall",
		kind: alltoallKind, spread: true,
		set: func(e *env, c *collBufs, n int) func() error {
			as := e.everyone()
			return func() error {
				pSync, _ := c.next()
				return shmem.AlltoallActiveSet(e.w, c.dst[:n*as.Size], c.src[:n*as.Size], n, as, pSync)
			}
		},
		team: func(e *env, c *collBufs, n int) func() error {
			t := e.w.TeamWorld()
			return func() error { return shmem.Alltoall(t, c.dst[:n*t.NPEs()], c.src[:n*t.NPEs()], n) }
		}},
	{name: "alltoalls_lat", doc: "alltoalls, strides of 1, of size bytes between every pair of PEs", setCall: "AlltoallsActiveSet", teamCall: "Alltoalls",
		kind: alltoallKind, spread: true,
		set: func(e *env, c *collBufs, n int) func() error {
			as := e.everyone()
			return func() error {
				pSync, _ := c.next()
				return shmem.AlltoallsActiveSet(e.w, c.dst[:n*as.Size], c.src[:n*as.Size], 1, 1, n, as, pSync)
			}
		},
		team: func(e *env, c *collBufs, n int) func() error {
			t := e.w.TeamWorld()
			return func() error { return shmem.Alltoalls(t, c.dst[:n*t.NPEs()], c.src[:n*t.NPEs()], 1, 1, n) }
		}},
	{name: "reduce_lat", doc: "sum-reduce of size bytes of int64 (at least one) over every PE", setCall: "SumToAll", teamCall: "SumReduce", kind: reduceKind,
		set: func(e *env, c *collBufs, n int) func() error {
			as := e.everyone()
			return func() error {
				pSync, pWrk := c.next()
				return shmem.SumToAll(e.w, c.dst[:n], c.src[:n], as, pWrk, pSync)
			}
		},
		team: func(e *env, c *collBufs, n int) func() error {
			t := e.w.TeamWorld()
			return func() error { return shmem.SumReduce(t, c.dst[:n], c.src[:n]) }
		}},
}

// words is the number of 64-bit elements a collective of size bytes
// moves: size/8, at least one, as in bench/peer/shmemperf.c.
func words(size int) int { return max(1, size/8) }

// everyone is the active set of every PE.
func (e *env) everyone() shmem.ActiveSet { return shmem.ActiveSet{Size: e.w.NPEs()} }

// collBufs are the collectives' symmetric buffers: a source and a dest of
// NPEs times the largest size, two pSync and two pWrk arrays that
// alternate from one active-set call to the next, and one float64 per PE
// where each PE leaves its figure for PE 0.
type collBufs struct {
	src, dst    []int64
	pSync, pWrk [2][]int64
	times       []float64
	phase       int
}

// next returns the pSync and pWrk of the next active-set call: the other
// pair.
func (c *collBufs) next() (pSync, pWrk []int64) {
	c.phase ^= 1
	return c.pSync[c.phase], c.pWrk[c.phase]
}

// collBuffers allocates the collectives' buffers on first use. Every PE
// runs the same tests in the same order, so every PE allocates them in
// the same test.
func (e *env) collBuffers() (*collBufs, error) {
	if e.coll != nil {
		return e.coll, nil
	}
	w, c := e.w, &collBufs{}
	var err error
	alloc := func(n int) []int64 {
		if err != nil {
			return nil
		}
		s, aerr := shmem.Calloc[int64](w, n)
		err = aerr
		return s
	}
	n := words(e.largest) * w.NPEs()
	c.src, c.dst = alloc(n), alloc(n)
	for i := range c.pSync {
		c.pSync[i] = alloc(shmem.SyncSize)
		c.pWrk[i] = alloc(shmem.ReduceWorkSize(words(e.largest)))
	}
	if err == nil {
		c.times, err = shmem.Calloc[float64](w, w.NPEs())
	}
	if err != nil {
		return nil, fmt.Errorf("the collectives' symmetric buffers: %w", err)
	}
	for _, ps := range c.pSync {
		for i := range ps {
			ps[i] = shmem.SyncValue // before the barrier that starts every test
		}
	}
	e.coll = c
	return c, nil
}

// collective checks and times k in the form mk makes, on size bytes.
func (e *env) collective(k collective, mk func(*env, *collBufs, int) func() error, size int, name string) (float64, error) {
	c, err := e.collBuffers()
	if err != nil {
		return 0, err
	}
	n := words(size)
	op := mk(e, c, n)
	if err := e.check(k.kind, c, n, op, name, size); err != nil {
		return 0, err
	}
	per := 1
	if k.spread {
		per = e.w.NPEs()
	}
	if k.kind == bcastKind {
		return e.eachCall(size, per, op, e.w.BarrierAll)
	}
	return e.everyPE(size, per, op)
}

// val is the value element i of PE pe's source holds for the checks.
func val(pe, i int) int64 { return int64(pe)*1000003 + int64(i) }

// check runs op once from a known source, untimed, and compares what it
// computed on this PE. A wrong element is reported on standard error and
// remembered, and run returns an error once every test is done, so that
// the PEs stay in step; an error from op is returned.
func (e *env) check(k kind, c *collBufs, n int, op func() error, name string, size int) error {
	w := e.w
	me, npes := w.MyPE(), w.NPEs()
	total := n * npes
	for i := range total {
		c.src[i], c.dst[i] = val(me, i), -1
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	if err := op(); err != nil {
		return err
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	for j := range total {
		r, i := j/n, j%n
		var want int64
		switch {
		case k == bcastKind && j < n && me != 0:
			want = val(0, i)
		case k == gatherKind:
			want = val(r, i)
		case k == alltoallKind:
			want = val(r, me*n+i)
		case k == reduceKind && j < n:
			want = 1000003*int64(npes*(npes-1)/2) + int64(npes*i)
		default:
			continue
		}
		if got := c.dst[j]; got != want {
			msg := fmt.Sprintf("%s, %d bytes, %d PEs: wrong result on PE %d: element %d is %d, not %d", name, size, npes, me, j, got, want)
			fmt.Fprintln(os.Stderr, "shmemperf:", msg)
			e.wrong = append(e.wrong, msg)
			break
		}
	}
	return w.BarrierAll()
}

// eachCall times each call of op alone and runs between, untimed, after
// each, on every PE, and returns, on PE 0, the largest of the PEs' mean
// microseconds per call.
func (e *env) eachCall(size, per int, op, between func() error) (float64, error) {
	c, err := e.collBuffers()
	if err != nil {
		return 0, err
	}
	if err := e.w.BarrierAll(); err != nil {
		return 0, err
	}
	warmup, iters := e.counts(size, per)
	for range warmup {
		if err := op(); err != nil {
			return 0, err
		}
		if err := between(); err != nil {
			return 0, err
		}
	}
	var in time.Duration
	for range iters {
		start := time.Now()
		if err := op(); err != nil {
			return 0, err
		}
		in += time.Since(start)
		if err := between(); err != nil {
			return 0, err
		}
	}
	us := float64(in.Nanoseconds()) / 1e3 / float64(iters)
	if err := shmem.P(e.w, &c.times[e.w.MyPE()], us, 0); err != nil {
		return 0, err
	}
	if err := e.w.BarrierAll(); err != nil {
		return 0, err
	}
	return slices.Max(c.times), nil // PE 0's is the one reported
}
