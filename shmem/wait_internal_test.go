package shmem

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// sliceWaiter is a LocalWaiter that records the longest sleep each
// WaitChange is given and returns at once: unchanged, or changed where
// change says.
type sliceWaiter struct {
	maxes  []time.Duration
	change func(call int) bool
}

func (s *sliceWaiter) WaitArm(core.Region, int, int) (uint32, int) { return 0, 0 }
func (s *sliceWaiter) WaitDisarm(int)                              {}
func (s *sliceWaiter) WaitChange(seq uint32, max time.Duration) uint32 {
	s.maxes = append(s.maxes, max)
	if s.change(len(s.maxes)) {
		return seq + 2
	}
	return seq
}

// A wait that lapses slice after slice sleeps twice as long each time, up
// to idleWaitSlice; a change starts it again at the World's slice.
func TestWaitSliceGrows(t *testing.T) {
	boot := bootstrap.NewLocal(1)[0]
	t.Cleanup(func() { _ = boot.Close() })
	fw := &sliceWaiter{change: func(call int) bool { return call == 7 }}
	w := &World{boot: boot, closed: make(chan struct{}), local: make([]byte, internalSize+exitSize(1)), waiter: fw, slice: time.Millisecond}
	require.NoError(t, w.waitFor(among{}, 0, 8, func() bool { return len(fw.maxes) == 10 }))
	ms := time.Millisecond
	require.Equal(t, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, idleWaitSlice, idleWaitSlice, idleWaitSlice, ms, 2 * ms, 4 * ms}, fw.maxes)

	// Where the World's slice is the idle one already (locked callers),
	// it stays.
	fw.maxes, fw.change = nil, func(int) bool { return false }
	w.slice = lockedWaitSlice
	require.NoError(t, w.waitFor(among{}, 0, 8, func() bool { return len(fw.maxes) == 3 }))
	require.Equal(t, []time.Duration{lockedWaitSlice, lockedWaitSlice, lockedWaitSlice}, fw.maxes)
}

// armWaiter is a LocalWaiter that records when it was first armed and,
// at its first WaitChange, runs then (which may store the word waited
// for).
type armWaiter struct {
	arms  atomic.Int32
	armed atomic.Int64 // unix ns of the first arm
	then  func()
}

func (a *armWaiter) WaitArm(core.Region, int, int) (uint32, int) {
	if a.arms.Add(1) == 1 {
		a.armed.Store(time.Now().UnixNano())
	}
	return 0, 0
}
func (a *armWaiter) WaitDisarm(int) {}
func (a *armWaiter) WaitChange(seq uint32, max time.Duration) uint32 {
	if a.then != nil {
		a.then()
		a.then = nil
	}
	return seq + 2
}

// relayer is a core.Domain that says whether it relays.
type relayer struct {
	core.Domain
	relays bool
}

func (r relayer) Relays() bool { return r.relays }

// A World yields in waitHostGE unless its domain relays other PEs'
// operations, which its process's goroutines must carry.
func TestHostYieldOf(t *testing.T) {
	if !sys.CanYield {
		require.Zero(t, hostYieldOf(relayer{}))
		return
	}
	require.Equal(t, hostYieldFor, hostYieldOf(relayer{relays: false}))
	require.Equal(t, hostYieldFor, hostYieldOf(struct{ core.Domain }{}))
	require.Zero(t, hostYieldOf(relayer{relays: true}))
}

// waitHostGE yields, without arming the waiter, while its PE is alone in
// its process and for no longer than hostYield; else it waits as waitGE.
func TestWaitHostYields(t *testing.T) {
	if !sys.CanYield {
		t.Skip("this system cannot yield")
	}
	saved := worldsHere.Load()
	t.Cleanup(func() { worldsHere.Store(saved) })
	boot := bootstrap.NewLocal(1)[0]
	t.Cleanup(func() { _ = boot.Close() })
	newWorld := func(a *armWaiter, yield time.Duration) *World {
		return &World{boot: boot, closed: make(chan struct{}), local: make([]byte, internalSize+exitSize(1)),
			waiter: a, slice: time.Millisecond, hostYield: yield}
	}
	word := func(w *World) *uint64 { return mem.Word64(w.local, 0) }
	wait := func(w *World) error {
		done := make(chan error, 1)
		go func() { done <- w.waitHostGE(among{}, 0, 1) }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("waitHostGE did not return")
			return nil
		}
	}

	// Alone: a store 2 ms in, long after a bounded spin, ends the yields;
	// the waiter is never armed.
	worldsHere.Store(1)
	a := &armWaiter{}
	w := newWorld(a, time.Hour)
	go func() {
		time.Sleep(2 * time.Millisecond)
		atomic.StoreUint64(word(w), 1)
	}()
	require.NoError(t, wait(w))
	require.Zero(t, a.arms.Load(), "armed while yielding")

	// Alone, nothing stored: the yields end after hostYield, and the wait
	// goes on armed.
	a = &armWaiter{}
	w = newWorld(a, 5*time.Millisecond)
	a.then = func() { atomic.StoreUint64(word(w), 1) }
	start := time.Now()
	require.NoError(t, wait(w))
	require.Equal(t, int32(1), a.arms.Load())
	require.GreaterOrEqual(t, time.Duration(a.armed.Load()-start.UnixNano()), 5*time.Millisecond, "armed before the yields' bound")

	// Another World in the process, whose goroutines may be the writer:
	// no yields, however long hostYield.
	worldsHere.Store(2)
	a = &armWaiter{}
	w = newWorld(a, time.Hour)
	a.then = func() { atomic.StoreUint64(word(w), 1) }
	require.NoError(t, wait(w))
	require.Equal(t, int32(1), a.arms.Load())
}
