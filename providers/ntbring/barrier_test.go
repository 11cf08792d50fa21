package ntbring

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// BarrierCheck is a barrier while its check says nothing, and the
// check's error ends a wait for hosts that never come: on each protocol
// and each barrier of the ring protocol.
func TestBarrierCheckEndsWait(t *testing.T) {
	protocols(t, func(t *testing.T, env map[string]string) {
		bars := []string{barrierRing, barrierDissemination}
		if env[paramProtocol.Env] == protoSeed {
			bars = bars[:1] // the seeds have the ring barrier only
		}
		for _, bar := range bars {
			env[paramBarrier.Env] = bar
			t.Run(bar, func(t *testing.T) { testBarrierCheckEndsWait(t, env) })
		}
	})
}

func testBarrierCheckEndsWait(t *testing.T, env map[string]string) {
	doms := openRingT(t, 3, env)
	each(doms, func(d *domain) {
		require.NoError(t, d.BarrierCheck(func() error { return nil }), "host %d", d.rank)
	})
	// Hosts 1 and 2 never enter the second barrier; host 0's check ends it.
	stop := errors.New("stop")
	var calls atomic.Int32
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- doms[0].BarrierCheck(func() error {
			// A second call at least: a loaded machine may make the
			// first one late.
			if calls.Add(1) > 1 && time.Since(start) > 50*time.Millisecond {
				return stop
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, stop)
		var op *core.OpError
		require.ErrorAs(t, err, &op)
		require.Equal(t, "barrier", op.Op)
	case <-time.After(10 * time.Second):
		t.Fatal("the check did not end the barrier")
	}
	require.Greater(t, calls.Load(), int32(1), "check is called while the barrier waits")
	require.NoError(t, doms[0].err(), "the caller's check is not a failure of the ring")
}
