package shmem

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// waitSlice bounds one sleep: a wake-up the provider cannot signal (a
// plain store by another goroutine of this process) is seen this late at
// worst, and a lost peer is noticed this often.
const waitSlice = time.Millisecond

// lockedWaitSlice is waitSlice where the program calls on goroutines
// locked to their threads (WithLockedCallers, a C program): each time such
// a goroutine wakes, the runtime processor passes to its thread and back,
// two thread switches that take the processor from the provider's
// goroutines carrying the traffic the wait is for (a PE waiting in a
// barrier while a peer's large puts land). A wake-up the provider
// signals is not delayed by it.
const lockedWaitSlice = 10 * time.Millisecond

// idleWaitSlice is how long one sleep of a wait grows to, doubling from
// the World's slice each time a whole slice passes with nothing changed:
// a PE idle in a long wait (in a barrier while two others work) wakes
// about a hundred times a second instead of a thousand. Each of those
// wake-ups is a thread's, and where PEs outnumber the CPUs it took the
// CPU from the PEs at work: shmemperf's target, serving PE 0's gets from
// another host while it waits in the closing barrier, made 8-byte put,
// get and fetch-add 7-31 % slower at 1 ms a sleep than at 8 ms
// (docs/measuring.md, "Waits on a shared host"). A wait that sees a
// change starts again at the
// World's slice, so a store nobody signals is seen within it in a short
// wait, and within this in a long one; a lost peer too.
const idleWaitSlice = lockedWaitSlice

// waitFor returns once cond holds, or with an error once a peer is lost or
// the World is finalized. It spins as the job's core.Waiting says (w.spins
// polls), then sleeps in the provider's LocalWaiter (futex or channel),
// which does not spin again, or backs off where there is none.
//
// off and n name the heap bytes cond reads, so the provider wakes this
// waiter only for writes to them. m is the members of the collective the
// wait is in, if it is in one: a member that finalized ends it (leftErr).
func (w *World) waitFor(m among, off, n int, cond func() bool) error {
	return w.waitIn(m, w.heap, off, n, cond)
}

// waitIn is waitFor on the bytes at off in r, the heap or a registered
// segment.
func (w *World) waitIn(m among, r core.Region, off, n int, cond func() bool) error {
	for i := 0; i < w.spins; i++ {
		if cond() {
			return nil
		}
	}
	var left sighting
	var ww waitWatch
	defer w.unwatch(&ww)
	check := func() error {
		if err := w.Err(); err != nil {
			return err
		}
		if err := w.leftErr(m, &left); err != nil {
			return err
		}
		w.watch(m, &ww)
		return nil
	}
	if w.waiter != nil {
		seq, watch := w.waiter.WaitArm(r, off, n)
		defer w.waiter.WaitDisarm(watch)
		slice := w.slice
		for !cond() {
			if err := check(); err != nil {
				return err
			}
			next := w.waiter.WaitChange(seq, slice)
			if next == seq {
				slice = min(2*slice, idleWaitSlice) // lapsed
			} else {
				slice = w.slice
			}
			seq = next
		}
		return nil
	}
	b := core.Backoff{Max: waitSlice}
	for !cond() {
		if err := check(); err != nil {
			return err
		}
		b.Pause()
	}
	return nil
}

// waitGE waits until the internal word at off reaches v.
func (w *World) waitGE(m among, off int, v uint64) error {
	p := mem.Word64(w.local, off)
	return w.waitFor(m, off, 8, func() bool { return atomic.LoadUint64(p) >= v })
}

// hostYieldFor bounds the yields of waitHostGE (World.hostYield).
const hostYieldFor = 400 * time.Microsecond

// hostYieldOf is World.hostYield for a World over dom: hostYieldFor, or
// 0 where the system cannot yield or dom's process relays other PEs'
// operations.
func hostYieldOf(dom core.Domain) time.Duration {
	if r, ok := dom.(core.Relayer); !sys.CanYield || ok && r.Relays() {
		return 0
	}
	return hostYieldFor
}

// worldsHere counts the Worlds open in this process: a PE alone in its
// process (worldsHere is 1) needs none of the process's goroutines to
// run for a PE of its host to write its memory.
var worldsHere atomic.Int32

// waitHostGE is waitGE for a word that only PEs of this host write,
// through the memory they share: a host-aware collective's leader
// releasing its peers, a host's PEs passing data down. Where this PE is
// alone in its process, it first gives its CPU to other processes and
// looks again (sched_yield, keeping its runtime processor), for up to
// World.hostYield, before waitGE's spin and sleep. No goroutine of this
// process is needed for the word to change, so holding the runtime
// processor delays only the process's other work (a transport's
// goroutines) and at most that long; and the writer finds no waiter
// armed, so it wakes nobody. Where the process relays other PEs'
// operations (core.Relayer: ntbring's lanes land what comes for every PE
// of the host), the writer may be waiting for this process, and
// hostYield is 0.
//
// Where the PEs outnumber the CPUs, a sleep here costs the collective's
// next step a wake-up: the released PE is the next to arrive, often its
// host's last, which sends the host's part on. A wake-up across CPUs
// took 30-36 µs on the machines we measure on where the woken CPU was
// idle, 18-20 where it was busy; a switch between two processes on one
// CPU took about 3. Namespaced hosts, 2 x 2 over tcp, alternating with
// waitGE here in one run (5 rounds, medians in µs): barrier 98.61
// against 105.01 and 8-byte sum-reduce 90.90 against 120.11 at
// GOMAXPROCS=1; 93.00 against 115.02 and 88.38 against 110.07 at 2
// (docs/measuring.md, "Waits on a shared host").
//
// The composite's waiters yield too, where they sleep in the poller,
// while no input waits for this process (loopback's yieldIdle): without
// the yields here, that measured slower on posed hosts, 105-140 against
// 90-105; with them, 2 x 2 took 38-48 µs a barrier against 92-103 with
// these yields alone.
func (w *World) waitHostGE(m among, off int, v uint64) error {
	p := mem.Word64(w.local, off)
	return w.waitHostIn(m, w.heap, off, 8, func() bool { return atomic.LoadUint64(p) >= v })
}

// waitHostIn is waitHostGE for any condition on the bytes at off in r.
func (w *World) waitHostIn(m among, r core.Region, off, n int, cond func() bool) error {
	if w.hostYield > 0 && worldsHere.Load() == 1 {
		for start := time.Now(); !cond(); sys.YieldHeld() {
			if time.Since(start) >= w.hostYield {
				return w.waitIn(m, r, off, n, cond)
			}
		}
		return nil
	}
	return w.waitIn(m, r, off, n, cond)
}

// WaitUntil blocks until the symmetric *ivar on this PE satisfies
// *ivar cmp v, as a store by another PE (or goroutine) makes it
// (shmem_wait_until). It returns an error if ivar is not symmetric, if a
// peer is lost, or if the World is finalized.
func WaitUntil[T WaitElem](c Ctx, ivar *T, cmp Cmp, v T) error {
	return waitVar(c, "wait_until", ivar, cmp, func(x T) bool { return compare(x, cmp, v) })
}

// waitVar waits until pred holds for the symmetric *ivar on this PE.
func waitVar[T WaitElem](c Ctx, op string, ivar *T, cmp Cmp, pred func(T) bool) error {
	w := c.context().w
	r, off, err := w.sym(op, mem.PtrAddr(ivar), mem.SizeOf[T]())
	if err != nil {
		return err
	}
	if err := checkCmp(cmp); err != nil {
		return err
	}
	return w.waitIn(among{op: op}, r, off, mem.SizeOf[T](), func() bool { return pred(mem.Load(ivar)) })
}

// Test reports whether the symmetric *ivar on this PE satisfies
// *ivar cmp v, without waiting (shmem_test).
func Test[T WaitElem](c Ctx, ivar *T, cmp Cmp, v T) (bool, error) {
	w := c.context().w
	if _, _, err := w.sym("test", mem.PtrAddr(ivar), mem.SizeOf[T]()); err != nil {
		return false, err
	}
	if err := checkCmp(cmp); err != nil {
		return false, err
	}
	return compare(mem.Load(ivar), cmp, v), nil
}

// The _all, _any, _some and _vector forms of WaitUntil and Test take a
// symmetric slice ivars and an optional status mask: status nil, or one
// entry per element, where a non-zero entry excludes that element. The
// _vector forms compare each ivars[i] with vals[i] instead of one v.
// They watch the whole slice, so one sleep covers every element.

// waitSet is the arguments of a multi-element wait or test.
type waitSet[T WaitElem] struct {
	ivars  []T
	status []int
	cmp    Cmp
	v      T
	vals   []T // nil: compare every element with v
}

// ok reports whether element i takes part and satisfies its comparison.
func (s *waitSet[T]) ok(i int) bool {
	if s.status != nil && s.status[i] != 0 {
		return false
	}
	want := s.v
	if s.vals != nil {
		want = s.vals[i]
	}
	return compare(mem.Load(&s.ivars[i]), s.cmp, want)
}

// active is the number of elements the status mask leaves in.
func (s *waitSet[T]) active() int {
	if s.status == nil {
		return len(s.ivars)
	}
	n := 0
	for _, st := range s.status {
		if st == 0 {
			n++
		}
	}
	return n
}

// check validates the set and returns the region and offset of ivars.
func (s *waitSet[T]) check(w *World, op string) (core.Region, int, error) {
	if err := checkCmp(s.cmp); err != nil {
		return nil, 0, err
	}
	if s.status != nil && len(s.status) != len(s.ivars) {
		return nil, 0, fmt.Errorf("shmem: %s: status has %d entries for %d variables; pass nil or one per variable: %w",
			op, len(s.status), len(s.ivars), core.ErrInvalid)
	}
	if s.vals != nil && len(s.vals) != len(s.ivars) {
		return nil, 0, fmt.Errorf("shmem: %s: %d comparison values for %d variables; pass one per variable: %w",
			op, len(s.vals), len(s.ivars), core.ErrInvalid)
	}
	if len(s.ivars) == 0 {
		return nil, 0, nil
	}
	return w.sym(op, mem.Addr(s.ivars), len(s.ivars)*mem.SizeOf[T]())
}

// all returns a condition that holds once every active element has been
// seen satisfied. It remembers how far it got, so each element is read
// until it holds and then no more: n elements cost O(n) loads in all.
func (s *waitSet[T]) all() func() bool {
	i := 0
	return func() bool {
		for i < len(s.ivars) && (s.ok(i) || (s.status != nil && s.status[i] != 0)) {
			i++
		}
		return i == len(s.ivars)
	}
}

// any returns a condition that holds once some active element satisfies
// its comparison, and stores its index in *found. Each scan starts where
// the World's rotation says, so a variable that is always ready cannot
// starve the others across calls.
func (s *waitSet[T]) any(start int, found *int) func() bool {
	n := len(s.ivars)
	return func() bool {
		for k := range n {
			if i := (start + k) % n; s.ok(i) {
				*found = i
				return true
			}
		}
		return false
	}
}

// some returns a condition that holds once at least one active element
// satisfies its comparison; it writes the indices of all that do, in
// increasing order, to indices and their number to *count.
func (s *waitSet[T]) some(indices []int, count *int) func() bool {
	return func() bool {
		c := 0
		for i := range s.ivars {
			if s.ok(i) {
				indices[c] = i
				c++
			}
		}
		*count = c
		return c > 0
	}
}

func waitAll[T WaitElem](c Ctx, op string, s *waitSet[T]) error {
	w := c.context().w
	r, off, err := s.check(w, op)
	if err != nil || s.active() == 0 {
		return err
	}
	return w.waitIn(among{op: op}, r, off, len(s.ivars)*mem.SizeOf[T](), s.all())
}

func waitAny[T WaitElem](c Ctx, op string, s *waitSet[T]) (int, error) {
	w := c.context().w
	r, off, err := s.check(w, op)
	if err != nil || s.active() == 0 {
		return -1, err
	}
	found := -1
	err = w.waitIn(among{op: op}, r, off, len(s.ivars)*mem.SizeOf[T](), s.any(w.syn.rotate(len(s.ivars)), &found))
	if err != nil {
		return -1, err
	}
	return found, nil
}

func waitSome[T WaitElem](c Ctx, op string, indices []int, s *waitSet[T]) (int, error) {
	w := c.context().w
	r, off, err := s.check(w, op)
	if err != nil {
		return 0, err
	}
	if err := checkIndices(op, indices, len(s.ivars)); err != nil {
		return 0, err
	}
	if s.active() == 0 {
		return 0, nil
	}
	count := 0
	if err := w.waitIn(among{op: op}, r, off, len(s.ivars)*mem.SizeOf[T](), s.some(indices, &count)); err != nil {
		return 0, err
	}
	return count, nil
}

// WaitUntilAll blocks until every element of ivars that status does not
// exclude satisfies ivars[i] cmp v (shmem_wait_until_all).
func WaitUntilAll[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, v T) error {
	return waitAll(c, "wait_until_all", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, v: v})
}

// WaitUntilAny blocks until some element of ivars that status does not
// exclude satisfies ivars[i] cmp v, and returns its index; -1 if status
// excludes every element or ivars is empty (shmem_wait_until_any).
func WaitUntilAny[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, v T) (int, error) {
	return waitAny(c, "wait_until_any", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, v: v})
}

// WaitUntilSome blocks until at least one element of ivars that status
// does not exclude satisfies ivars[i] cmp v; it writes the indices of all
// that do to indices (which holds len(ivars) entries) and returns how many
// there are; 0 if status excludes every element (shmem_wait_until_some).
func WaitUntilSome[T WaitElem](c Ctx, ivars []T, indices, status []int, cmp Cmp, v T) (int, error) {
	return waitSome(c, "wait_until_some", indices, &waitSet[T]{ivars: ivars, status: status, cmp: cmp, v: v})
}

// WaitUntilAllVector is WaitUntilAll comparing ivars[i] with vals[i]
// (shmem_wait_until_all_vector).
func WaitUntilAllVector[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, vals []T) error {
	return waitAll(c, "wait_until_all_vector", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, vals: nonNil(vals)})
}

// WaitUntilAnyVector is WaitUntilAny comparing ivars[i] with vals[i]
// (shmem_wait_until_any_vector).
func WaitUntilAnyVector[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, vals []T) (int, error) {
	return waitAny(c, "wait_until_any_vector", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, vals: nonNil(vals)})
}

// WaitUntilSomeVector is WaitUntilSome comparing ivars[i] with vals[i]
// (shmem_wait_until_some_vector).
func WaitUntilSomeVector[T WaitElem](c Ctx, ivars []T, indices, status []int, cmp Cmp, vals []T) (int, error) {
	return waitSome(c, "wait_until_some_vector", indices, &waitSet[T]{ivars: ivars, status: status, cmp: cmp, vals: nonNil(vals)})
}

// nonNil makes a nil vals an empty one, so a vector form given nil fails
// the length check instead of silently comparing with zero.
func nonNil[T any](vals []T) []T {
	if vals == nil {
		return []T{}
	}
	return vals
}

// testOnce evaluates cond once after validating the set.
func testOnce[T WaitElem](c Ctx, op string, s *waitSet[T], cond func(*waitSet[T]) func() bool) (bool, error) {
	if _, _, err := s.check(c.context().w, op); err != nil {
		return false, err
	}
	return cond(s)(), nil
}

// TestAll reports whether every element of ivars that status does not
// exclude satisfies ivars[i] cmp v, without waiting (shmem_test_all).
// With every element excluded it reports true.
func TestAll[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, v T) (bool, error) {
	return testOnce(c, "test_all", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, v: v}, (*waitSet[T]).all)
}

// TestAllVector is TestAll comparing ivars[i] with vals[i] (shmem_test_all_vector).
func TestAllVector[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, vals []T) (bool, error) {
	return testOnce(c, "test_all_vector", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, vals: nonNil(vals)}, (*waitSet[T]).all)
}

// TestAny returns the index of an element of ivars, not excluded by
// status, that satisfies ivars[i] cmp v, or -1 if there is none, without
// waiting (shmem_test_any).
func TestAny[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, v T) (int, error) {
	return testAny(c, "test_any", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, v: v})
}

// TestAnyVector is TestAny comparing ivars[i] with vals[i] (shmem_test_any_vector).
func TestAnyVector[T WaitElem](c Ctx, ivars []T, status []int, cmp Cmp, vals []T) (int, error) {
	return testAny(c, "test_any_vector", &waitSet[T]{ivars: ivars, status: status, cmp: cmp, vals: nonNil(vals)})
}

func testAny[T WaitElem](c Ctx, op string, s *waitSet[T]) (int, error) {
	w := c.context().w
	found := -1
	_, err := testOnce(c, op, s, func(s *waitSet[T]) func() bool {
		if len(s.ivars) == 0 {
			return func() bool { return false }
		}
		return s.any(w.syn.rotate(len(s.ivars)), &found)
	})
	return found, err
}

// TestSome writes to indices the index of every element of ivars, not
// excluded by status, that satisfies ivars[i] cmp v, and returns how many
// there are, without waiting (shmem_test_some).
func TestSome[T WaitElem](c Ctx, ivars []T, indices, status []int, cmp Cmp, v T) (int, error) {
	return testSome(c, "test_some", indices, &waitSet[T]{ivars: ivars, status: status, cmp: cmp, v: v})
}

// TestSomeVector is TestSome comparing ivars[i] with vals[i] (shmem_test_some_vector).
func TestSomeVector[T WaitElem](c Ctx, ivars []T, indices, status []int, cmp Cmp, vals []T) (int, error) {
	return testSome(c, "test_some_vector", indices, &waitSet[T]{ivars: ivars, status: status, cmp: cmp, vals: nonNil(vals)})
}

func testSome[T WaitElem](c Ctx, op string, indices []int, s *waitSet[T]) (int, error) {
	if err := checkIndices(op, indices, len(s.ivars)); err != nil {
		return 0, err
	}
	count := 0
	_, err := testOnce(c, op, s, func(s *waitSet[T]) func() bool { return s.some(indices, &count) })
	return count, err
}

func checkIndices(op string, indices []int, n int) error {
	if len(indices) < n {
		return fmt.Errorf("shmem: %s: indices holds %d entries for %d variables: %w", op, len(indices), n, core.ErrInvalid)
	}
	return nil
}

// syncState is the World's state for point-to-point synchronisation,
// locks and global exit.
type syncState struct {
	rot   atomic.Uint32 // where the next any-scan starts
	locks lockTable
	exit  exitState
}

// rotate returns the start index of the next scan over n elements.
func (s *syncState) rotate(n int) int {
	return int(s.rot.Add(1)-1) % n
}

func checkCmp(c Cmp) error {
	if c < CmpEQ || c > CmpLE {
		return &cmpError{c}
	}
	return nil
}

type cmpError struct{ c Cmp }

func (e *cmpError) Error() string {
	return fmt.Sprintf("shmem: comparison %d is not one of CmpEQ, CmpNE, CmpGT, CmpGE, CmpLT, CmpLE", uint8(e.c))
}

func (e *cmpError) Unwrap() error { return core.ErrInvalid }
