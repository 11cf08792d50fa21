package tcp

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// A batch's puts and atomics land in order and in few writes: 200 of
// them spaced wider than burstGap, which outside a batch their issuer
// writes one by one, leave in a handful. A batch never stopped still
// delivers within about batchHold: a peer waiting for its put is not
// held up. Quiet completes a batch's operations without StopBatch.
func TestBatchCombinesAndDelivers(t *testing.T) {
	doms, _ := openJob(t, 2, nil)
	regs := newRegions(t, doms, 1<<16)
	ep := newEndpoint(t, doms[0])
	c := doms[0].conns[1]

	const n = 200
	for _, batch := range []bool{false, true} {
		w0 := c.w.writes.Load()
		if batch {
			ep.StartBatch(n)
		}
		for i := range n {
			for start := time.Now(); time.Since(start) < 3*time.Microsecond; {
			}
			require.NoError(t, ep.PutValue(1, regs[0], 8+i*8, uint64(i+1), 8))
		}
		require.NoError(t, ep.Atomic(1, regs[0], 0, core.AtomicAdd, core.Uint64, 1))
		require.NoError(t, ep.StopBatch())
		require.NoError(t, ep.Quiet())
		writes := c.w.writes.Load() - w0
		if batch {
			require.Less(t, writes, uint64(n/10), "a batch of %d spaced puts took %d writes", n, writes)
		} else {
			require.Greater(t, writes, uint64(n/2), "outside a batch spaced puts are written one by one")
		}
		for i := range n {
			require.Equal(t, uint64(i+1), *mem.Word64(regs[1].mem, 8+i*8))
		}
	}
	require.Equal(t, uint64(2), *mem.Word64(regs[1].mem, 0))

	// Not stopped, not quieted: it lands all the same, soon.
	ep.StartBatch(0)
	require.NoError(t, ep.PutValue(1, regs[0], 8, 999, 8))
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadUint64(mem.Word64(regs[1].mem, 8)) != 999 {
		require.True(t, time.Now().Before(deadline), "a batch's put never left")
		time.Sleep(10 * time.Microsecond)
	}
	require.NoError(t, ep.Quiet(), "quiet completes a batch's operations")
	require.Equal(t, ep.counter.Issued(), ep.counter.CompletedUpTo())
	require.NoError(t, ep.StopBatch())
	require.NoError(t, ep.StopBatch(), "a second stop does nothing")
}
