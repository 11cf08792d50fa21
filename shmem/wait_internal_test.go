package shmem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
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
	w := &World{boot: boot, closed: make(chan struct{}), local: make([]byte, internalSize+64), waiter: fw, slice: time.Millisecond}
	require.NoError(t, w.waitFor(0, 8, func() bool { return len(fw.maxes) == 10 }))
	ms := time.Millisecond
	require.Equal(t, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, idleWaitSlice, idleWaitSlice, idleWaitSlice, ms, 2 * ms, 4 * ms}, fw.maxes)

	// Where the World's slice is the idle one already (locked callers),
	// it stays.
	fw.maxes, fw.change = nil, func(int) bool { return false }
	w.slice = lockedWaitSlice
	require.NoError(t, w.waitFor(0, 8, func() bool { return len(fw.maxes) == 3 }))
	require.Equal(t, []time.Duration{lockedWaitSlice, lockedWaitSlice, lockedWaitSlice}, fw.maxes)
}
