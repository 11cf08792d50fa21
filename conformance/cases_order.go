package conformance

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

func orderCases() []Case {
	return []Case{
		{Name: "Order/PutFenceAtomic", Needs: rmaCaps | core.CapFetchAtomic, Core: caseOrderPutFenceAtomic},
	}
}

// The words and data of caseOrderPutFenceAtomic's region.
const (
	orderFlag = 0  // arrivals from the left neighbour, consumed one by one
	orderAck  = 8  // checks done by the right neighbour
	orderData = 64 // the payload, up to orderMax bytes
	orderMax  = 40000 + orderRounds
)

const orderRounds = 300

// The guarantees signalling over a provider rests on, asked of the
// provider directly, round after round, as the active-set collectives use
// them: a put, a fence, then a non-fetching add to a flag on the same PE
// must land the put first; a put's source may be overwritten as soon as
// the put returns; and a fetching add to this PE's own flag is complete,
// and seen by a load here, when it returns. Every PE signals its right
// neighbour and waits for its left one; a PE puts again only after its
// neighbour has checked the last payload and said so.
func caseOrderPutFenceAtomic(t *T, j CoreJob) {
	d := j.Domain
	me, n := d.Rank(), d.Size()
	right, left := (me+1)%n, (me+n-1)%n
	r, err := d.NewRegion(orderData + orderMax)
	require.NoError(t, err)
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	require.NoError(t, j.Boot.Barrier())
	local := r.Local()
	flag, ack := mem.Word64(local, orderFlag), mem.Word64(local, orderAck)
	src := make([]byte, orderMax)
	sizes := []int{1, 8, 1000, 4096, 40000}
	for round := 1; round <= orderRounds; round++ {
		size := sizes[round%len(sizes)] + round%7
		orderWait(t, j, "the check of round", round-1, func() bool { return atomic.LoadUint64(ack) >= uint64(round-1) })
		copy(src, pattern(me, size, round))
		require.NoError(t, ep.Put(right, r, orderData, src[:size]))
		// What the put sent is what it held when called, not this.
		for i := range src[:size] {
			src[i] = ^src[i]
		}
		require.NoError(t, ep.Fence())
		require.NoError(t, ep.Atomic(right, r, orderFlag, core.AtomicAdd, core.Uint64, 1))

		orderWait(t, j, "the flag of round", round, func() bool { return atomic.LoadUint64(flag) >= 1 })
		if got := local[orderData : orderData+size]; !slices.Equal(got, pattern(left, size, round)) {
			i := 0
			for got[i] == pattern(left, size, round)[i] {
				i++
			}
			t.Fatalf("round %d: the flag from PE %d arrived before its fenced put of %d bytes, or the put sent its source as overwritten after it returned: byte %d differs",
				round, left, size, i)
		}
		old, err := ep.FetchAtomic(me, r, orderFlag, core.AtomicAdd, core.Uint64, ^uint64(0), 0)
		require.NoError(t, err)
		require.Equal(t, uint64(1), old, "round %d: the flag before this PE consumed it", round)
		// Nobody else adds to it before the ack below.
		require.Zero(t, atomic.LoadUint64(flag), "round %d: the flag as loaded here once a fetching add to it returned", round)
		require.NoError(t, ep.Atomic(left, r, orderAck, core.AtomicAdd, core.Uint64, 1))
	}
	orderWait(t, j, "the check of round", orderRounds, func() bool { return atomic.LoadUint64(ack) >= orderRounds })
	require.NoError(t, ep.Quiet())
	require.NoError(t, j.Boot.Barrier())
	require.NoError(t, ep.Close())
}

// orderWait polls cond, which a neighbour's operations make true. It
// fails the PE once a member is lost (one that failed its check gives no
// more signals), or after a bound far above any provider's latency: a
// missing signal is a failure to report, not a hang.
func orderWait(t *T, j CoreJob, what string, round int, cond func() bool) {
	deadline := time.Now().Add(30 * time.Second)
	var b core.Backoff
	for !cond() {
		require.NoError(t, j.Boot.Err(), "waiting for %s %d", what, round)
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s %d", what, round)
		}
		b.Pause()
	}
}
