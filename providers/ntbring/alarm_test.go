package ntbring

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// Every host of every ring up to the largest is named by the alarm to
// each neighbour that hears it, in the six bits of the alarm; the host
// that hears itself named hears the host beyond it instead.
func TestAlarmNamesEveryHost(t *testing.T) {
	for n := 2; n <= 64; n++ {
		topo := ringOf(n)
		for from := range n {
			for _, s := range topo.sides() {
				hearer := topo.neighbour(from, s)
				for lost := range n {
					db := alarmBits(topo, from, s, lost)
					require.Zero(t, db&^dbAlarmMask, "only the alarm's bits")
					got, ok := alarmLost(db, hearer, from, n)
					require.True(t, ok, "n %d from %d side %s lost %d", n, from, s, lost)
					want := lost
					if lost == hearer {
						want = topo.neighbour(hearer, s)
					}
					require.Equal(t, want, got, "n %d from %d side %s lost %d", n, from, s, lost)
				}
			}
		}
	}
	_, ok := alarmLost(1<<dbRing|1<<dbBarrierStart, 3, 2, 64)
	require.False(t, ok, "bits outside the alarm's are no alarm")
	got, ok := alarmLost(5<<dbAlarmShift, 1, 2, 4)
	require.True(t, ok)
	require.Equal(t, 2, got, "a value past the ring names the host that rang")
}

// FuzzAlarmLost feeds doorbell bits as a neighbour might ring them: any
// bits are read without a panic, and an alarm names a host of the ring.
func FuzzAlarmLost(f *testing.F) {
	f.Add(uint64(0), 0, 1, 2)
	f.Add(uint64(63)<<dbAlarmShift, 63, 0, 64)
	f.Add(uint64(0xFFFF), 5, 6, 7)
	f.Fuzz(func(t *testing.T, db uint64, self, from, n int) {
		if n < 2 || n > maxHosts || self < 0 || self >= n || from < 0 || from >= n || from == self {
			return
		}
		lost, ok := alarmLost(db, self, from, n)
		if !ok {
			require.Zero(t, db&dbAlarmMask)
			return
		}
		require.GreaterOrEqual(t, lost, 0)
		require.Less(t, lost, n)
		require.NotEqual(t, self, lost, "the alarm never names the host that hears it")
	})
}

// A ring of 64 hosts, the largest, on the simulated device: a put to the
// far side and back, a fetch-add at every host and a barrier.
func TestSimRingOf64(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 64
		doms := openRingT(t, n, simEnv)
		rs := regions(t, doms, 4096)
		each(doms, func(d *domain) {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			require.NoError(t, err)
			far := (d.rank + n/2) % n
			require.NoError(t, ep.Put(far, rs[d.rank], 8*d.rank, []byte{byte(d.rank)}))
			require.NoError(t, ep.Quiet())
			_, err = ep.FetchAtomic(0, rs[d.rank], 1024, core.AtomicAdd, core.Uint64, 1, 0)
			require.NoError(t, err)
			require.NoError(t, d.Barrier())
		})
		for pe, r := range rs {
			src := (pe + n/2) % n
			require.Equal(t, byte(src), r.Local()[8*src], "host %d", pe)
		}
		require.Equal(t, byte(n), rs[0].Local()[1024])
	})
}

// On a ring of 64, host 63 (the host the six bits could not name as one
// plus its id) dies: the host half way round hears of it from the alarm
// and names it.
func TestSimAlarmNamesHost63(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 64
		doms, err := openRingErr(t, n, simEnv)
		require.NoError(t, err)
		require.NoError(t, doms[n-1].proto.close())
		for start := time.Now(); doms[n/2].err() == nil; {
			require.Less(t, time.Since(start), time.Minute, "host %d never heard of the death", n/2)
			time.Sleep(time.Millisecond)
		}
		var pl *core.PeerLostError
		require.ErrorAs(t, doms[n/2].err(), &pl)
		require.Equal(t, n-1, pl.PE)
		doms[n-1].boot.(interface{ Kill() }).Kill()
		each(doms[:n-1], func(d *domain) { require.ErrorIs(t, d.Close(), core.ErrPeerLost) })
	})
}
