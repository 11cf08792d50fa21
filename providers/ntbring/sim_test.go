package ntbring

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// simEnv runs a ring on the simulated device.
var simEnv = map[string]string{"GOSHMEM_NTBRING_DEVICE": deviceSim}

// The ring protocol over the simulated fabric, in virtual time: puts,
// gets and an atomic round a ring of 4, and a 1 MiB put to the far side
// that takes the virtual time the model says.
func TestSimPutGetAroundTheRing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 4
		doms := openRingT(t, n, simEnv)
		rs := regions(t, doms, 2<<20)
		each(doms, func(d *domain) {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			require.NoError(t, err)
			for pe := range n {
				require.NoError(t, ep.Put(pe, rs[d.rank], 64*d.rank, []byte{byte(d.rank), byte(pe), 1}))
			}
			require.NoError(t, ep.Quiet())
		})
		each(doms, func(d *domain) { require.NoError(t, d.Barrier()) })
		for pe, r := range rs {
			for src := range n {
				require.Equal(t, []byte{byte(src), byte(pe), 1}, r.Local()[64*src:64*src+3])
			}
		}
		ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
		require.NoError(t, err)
		got := make([]byte, 3)
		require.NoError(t, ep.Get(2, rs[0], 64*0, got))
		require.Equal(t, []byte{0, 2, 1}, got)
		old, err := ep.FetchAtomic(2, rs[0], 1024, core.AtomicAdd, core.Uint64, 1, 0)
		require.NoError(t, err)
		require.Zero(t, old)

		big := make([]byte, 1<<20)
		start := time.Now()
		require.NoError(t, ep.Put(2, rs[0], 1<<20, big))
		require.NoError(t, ep.Quiet())
		took := time.Since(start)
		t.Logf("1 MiB two hops: %v virtual", took)
		require.Greater(t, took, 100*time.Microsecond)
	})
}
