package ntbring

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

func TestPutGetAroundTheRing(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		doms := openRingT(t, n, nil)
		rs := regions(t, doms, 1<<20)
		each(doms, func(d *domain) {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			require.NoError(t, err)
			for pe := range n {
				msg := []byte{byte(d.rank), byte(pe), 1, 2, 3}
				require.NoError(t, ep.Put(pe, rs[d.rank], 64*d.rank, msg))
			}
			require.NoError(t, ep.Quiet())
		})
		each(doms, func(d *domain) { require.NoError(t, d.Barrier()) })
		for pe, r := range rs {
			for src := range n {
				require.Equal(t, []byte{byte(src), byte(pe), 1, 2, 3}, r.Local()[64*src:64*src+5], "host %d from %d", pe, src)
			}
		}
		each(doms, func(d *domain) {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			require.NoError(t, err)
			for pe := range n {
				got := make([]byte, 5)
				require.NoError(t, ep.Get(pe, rs[d.rank], 64*d.rank, got))
				require.Equal(t, []byte{byte(d.rank), byte(pe), 1, 2, 3}, got)
				old, err := ep.FetchAtomic(pe, rs[d.rank], 1024, core.AtomicAdd, core.Uint64, 1, 0)
				require.NoError(t, err)
				require.Less(t, old, uint64(n))
			}
		})
	}
}

// The ring barrier lets no host through before all have entered: each
// round every host puts the round number into its right neighbour and
// quiets, and after the barrier finds its left neighbour's number.
func TestRingBarrier(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		doms := openRingT(t, n, nil)
		rs := regions(t, doms, 64)
		each(doms, func(d *domain) {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			require.NoError(t, err)
			for round := uint64(1); round <= 100; round++ {
				require.NoError(t, ep.PutValue((d.rank+1)%n, rs[d.rank], 8*int(round%2), round, 8))
				require.NoError(t, ep.Quiet())
				require.NoError(t, d.Barrier())
				got := mem.LoadValue(rs[d.rank].Local(), 8*int(round%2), 8)
				require.Equal(t, round, got, "host %d after barrier %d", d.rank, round)
			}
		})
	}
}

// A remote put wakes a host sleeping in WaitChange: shmem's wait_until
// sleeps instead of polling.
func TestWaiterWokenByRemotePut(t *testing.T) {
	doms := openRingT(t, 3, nil)
	rs := regions(t, doms, 64)
	d := doms[2]
	seq, watch := d.WaitArm(rs[2], 0, 8)
	defer d.WaitDisarm(watch)
	require.Equal(t, seq, d.WaitChange(seq, 0), "max 0 does not sleep")
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	go func() {
		if err := ep.PutValue(2, rs[0], 0, 42, 8); err != nil {
			t.Error(err)
		}
	}()
	for mem.LoadValue(rs[2].Local(), 0, 8) != 42 {
		// An hour: only a wake-up by the put ends this in time.
		seq = d.WaitChange(seq, time.Hour)
	}
}

// A composite that sleeps in another transport is told of remote writes
// (core.WaitNotifier) while a waiter is armed, and only then.
func TestWaitNotifyWhileArmed(t *testing.T) {
	doms := openRingT(t, 2, nil)
	rs := regions(t, doms, 64)
	d := doms[1]
	var told atomic.Int32
	d.SetWaitNotify(func() { told.Add(1) })
	defer d.SetWaitNotify(nil)
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	put := func(v uint64) {
		before := d.seq.Load()
		require.NoError(t, ep.PutValue(1, rs[0], 0, v, 8))
		for seq := before; mem.LoadValue(rs[1].Local(), 0, 8) != v || d.seq.Load() == before; {
			seq = d.WaitChange(seq, time.Hour) // woken by the landing
		}
	}
	put(1)
	require.Zero(t, told.Load(), "told of a write while no waiter was armed")
	_, watch := d.WaitArm(rs[1], 0, 8)
	put(2)
	d.WaitDisarm(watch)
	require.Eventually(t, func() bool { return told.Load() > 0 }, time.Minute, time.Millisecond,
		"not told of a write while a waiter was armed")
}

// A stream of direct puts shares landed notices (a put skips its notice
// while an earlier one is still to be acted on), yet the neighbour's
// waiter is woken for the last value of the stream, round after round.
func TestWaiterWokenByPutStream(t *testing.T) {
	doms := openRingT(t, 2, nil)
	rs := regions(t, doms, 64)
	d := doms[1]
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	const rounds, stream = 200, 50
	for round := range uint64(rounds) {
		seq, watch := d.WaitArm(rs[1], 0, 8)
		go func() {
			for v := range uint64(stream) {
				if err := ep.PutValue(1, rs[0], 0, round*stream+v+1, 8); err != nil {
					t.Error(err)
				}
			}
		}()
		for mem.LoadValue(rs[1].Local(), 0, 8) != (round+1)*stream {
			// An hour: only a wake-up by the stream ends this in time.
			seq = d.WaitChange(seq, time.Hour)
		}
		d.WaitDisarm(watch)
	}
}
