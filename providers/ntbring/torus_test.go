package ntbring

import (
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/ntb/sim"
)

// torusEnv runs the ring protocol on a simulated 2D torus.
var torusEnv = map[string]string{"GOSHMEM_NTBRING_DEVICE": deviceSim, "GOSHMEM_NTB_SIM_TOPOLOGY": "torus"}

// allPairs has every host put to every other, get it back, add to a
// counter at each, and meet at a barrier.
func allPairs(t *testing.T, doms []*domain, rs []core.Region, round byte) {
	n := len(doms)
	each(doms, func(d *domain) {
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		require.NoError(t, err)
		for pe := range n {
			require.NoError(t, ep.Put(pe, rs[d.rank], 64*d.rank, []byte{byte(d.rank), byte(pe), round}))
		}
		require.NoError(t, ep.Quiet())
		for pe := range n {
			got := make([]byte, 3)
			require.NoError(t, ep.Get(pe, rs[d.rank], 64*d.rank, got))
			require.Equal(t, []byte{byte(d.rank), byte(pe), round}, got)
			_, err := ep.FetchAtomic(pe, rs[d.rank], 8192, core.AtomicAdd, core.Uint64, 1, 0)
			require.NoError(t, err)
		}
		require.NoError(t, d.Barrier())
	})
}

// The ring protocol over a 4 x 4 torus: the device describes the
// fabric, every host has four links, every pair of hosts exchanges puts,
// gets and atomics, and a transfer takes the torus's shortest path: to
// the farthest host 4 hops, where a ring of 16 takes 8.
func TestSimTorus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 16
		doms := openRingT(t, n, torusEnv)
		for _, d := range doms {
			require.Equal(t, torusOf(n, 4), d.topo)
			require.Len(t, d.proto.(*ringProto).all(), 4)
		}
		rs := regions(t, doms, 16<<10)
		allPairs(t, doms, rs, 1)
		for pe, r := range rs {
			for src := range n {
				require.Equal(t, []byte{byte(src), byte(pe), 1}, r.Local()[64*src:64*src+3])
			}
			require.Equal(t, byte(n), r.Local()[8192])
		}
		_, hops := doms[0].topo.hopsTo(0, 10)
		require.Equal(t, 4, hops)
		for _, d := range doms {
			require.Zero(t, d.drops.Load(), "host %d dropped descriptors", d.rank)
		}
	})
}

// A cut link of the torus: its two ends route round it, every host
// learns of it from its neighbours, and traffic between every pair goes
// on, with nothing lost or repeated (the counters at every host count
// each add once); a second cut elsewhere is routed round too.
func TestSimTorusCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 16
		doms := openRingT(t, n, torusEnv)
		rs := regions(t, doms, 16<<10)
		f := doms[0].proto.(*ringProto).link(ntb.Left).port.(*sim.Port).Fabric()
		allPairs(t, doms, rs, 1)
		for i, k := range []int{f.LinkOf(5, ntb.Right), f.LinkOf(10, ntb.Down)} {
			f.SetLinkDown(k, true)
			for _, d := range doms {
				p := d.proto.(*ringProto)
				for start := time.Now(); ; time.Sleep(10 * time.Microsecond) {
					p.routeMu.Lock()
					known := p.cuts.has(k)
					p.routeMu.Unlock()
					if known {
						break
					}
					require.Less(t, time.Since(start), time.Second, "host %d never learned of the cut of link %d", d.rank, k)
				}
			}
			allPairs(t, doms, rs, byte(2+i))
		}
		for pe, r := range rs {
			for src := range n {
				require.Equal(t, []byte{byte(src), byte(pe), 3}, r.Local()[64*src:64*src+3])
			}
			require.Equal(t, byte(3*n), r.Local()[8192], "host %d's counter", pe)
		}
		for _, d := range doms {
			require.NoError(t, d.err())
			require.Zero(t, d.drops.Load(), "host %d dropped descriptors", d.rank)
		}
	})
}

// The seeds' protocol and barrier go round a ring: on a torus they are
// refused, saying what to use.
func TestSimTorusRefuses(t *testing.T) {
	for _, extra := range []map[string]string{{paramProtocol.Env: protoSeed}, {paramBarrier.Env: barrierRing}} {
		env := maps.Clone(torusEnv)
		maps.Copy(env, extra)
		_, err := openRingErr(t, 4, env)
		require.ErrorIs(t, err, core.ErrNotSupported)
		require.ErrorContains(t, err, "runs on a ring only")
	}
	env := maps.Clone(torusEnv)
	env["GOSHMEM_NTB_SIM_TOPOLOGY"] = "torus"
	_, err := openRingErr(t, 5, env)
	require.ErrorContains(t, err, "GOSHMEM_NTB_SIM_TOPOLOGY")
}
