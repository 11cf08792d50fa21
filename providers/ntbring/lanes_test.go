package ntbring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/providers/hybrid"
)

// recorder is ntbring as the composite opens it, keeping every PE's ring
// domain for the test to look into.
type recorder struct {
	provider
	mu   sync.Mutex
	doms map[int]*domain
}

func (r *recorder) Open(cfg *core.Config) (core.Domain, error) {
	d, err := r.provider.Open(cfg)
	if err == nil {
		r.mu.Lock()
		r.doms[cfg.Bootstrap.Rank()] = d.(*domain)
		r.mu.Unlock()
	}
	return d, err
}

// openLanesT opens a job of hosts x per PEs as goroutines posing as
// hosts, ntbring+loopback, and closes it at cleanup. It returns the
// composite domains and the ring domains, by job PE.
func openLanesT(t testing.TB, hosts, per int, env map[string]string) ([]core.Domain, []*domain) {
	t.Helper()
	n := hosts * per
	boots := bootstrap.NewLocal(n)
	shm, job := t.TempDir(), randomID()
	rec := &recorder{doms: map[int]*domain{}}
	p := hybrid.Compose(rec)
	doms := make([]core.Domain, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		e := maps.Clone(env)
		wg.Go(func() {
			doms[i], errs[i] = p.Open(&core.Config{Bootstrap: boots[i], JobID: job, Env: testEnv(shm, e),
				HostID: fmt.Sprintf("lanes-host-%d", i/per)})
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for i, d := range doms {
			wg.Go(func() {
				// A job that lost a PE cannot close cleanly.
				if err := d.Close(); err != nil && boots[i].Err() == nil {
					t.Errorf("close PE %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	})
	rings := make([]*domain, n)
	for i := range n {
		rings[i] = rec.doms[i]
	}
	return doms, rings
}

// Two hosts of two PEs: one ring per lane, of the two hosts, each PE the
// node of its lane on its host.
func TestLanesTopology(t *testing.T) {
	_, rings := openLanesT(t, 2, 2, nil)
	for pe, d := range rings {
		require.Equal(t, 2, d.lanes, "PE %d", pe)
		require.Equal(t, 2, d.npes, "PE %d: ring of hosts", pe)
		require.Equal(t, pe/2, d.rank, "PE %d: its host", pe)
		require.Equal(t, pe%2, d.lane, "PE %d: its lane", pe)
		require.Equal(t, pe, d.Rank())
		require.Equal(t, 4, d.Size())
	}
}

// Alone, ntbring over several PEs per host refuses what it cannot serve:
// with the composite off it does not open, with a clear error.
func TestLanesAloneRefused(t *testing.T) {
	const n, per = 4, 2
	boots := bootstrap.NewLocal(n)
	shm, job := t.TempDir(), randomID()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, err := provider{}.Open(&core.Config{Bootstrap: boots[i], JobID: job,
				Env:    testEnv(shm, map[string]string{core.EnvHybrid: "0"}),
				HostID: fmt.Sprintf("alone-host-%d", i/per)})
			if err == nil {
				err = errors.Join(errors.New("opened"), d.Close())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, core.ErrNotSupported, "PE %d", i)
		require.ErrorContains(t, err, "composed with loopback", "PE %d", i)
	}
}

// Hosts of unequal PE counts cannot be lanes: a clear error on every PE.
func TestLanesUnequalHosts(t *testing.T) {
	const n = 3
	boots := bootstrap.NewLocal(n)
	shm, job := t.TempDir(), randomID()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			host := "uneq-a"
			if i == 2 {
				host = "uneq-b"
			}
			_, errs[i] = hybrid.Compose(provider{}).Open(&core.Config{Bootstrap: boots[i], JobID: job,
				Env: testEnv(shm, nil), HostID: host})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.ErrorContains(t, err, "the same number on every host", "PE %d", i)
	}
}

// laneStream has every PE put a distinct block into every PE of the
// other hosts and fetch-add one to its counter there, steps times; mid
// runs on every PE before step steps/2. Each PE's fetch-adds to one
// target must see every old value once.
func laneStream(doms []core.Domain, per int, data, ctr []core.Region, steps int, mid func(me int) error) []error {
	n := len(doms)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for me, d := range doms {
		wg.Go(func() {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			if err != nil {
				errs[me] = err
				return
			}
			defer ep.Close()
			seen := make([]map[uint64]bool, n)
			for k := range steps {
				if k == steps/2 {
					if errs[me] = mid(me); errs[me] != nil {
						return
					}
				}
				for pe := range n {
					if pe/per == me/per {
						continue
					}
					if seen[pe] == nil {
						seen[pe] = map[uint64]bool{}
					}
					off := (me*steps + k) * streamStride
					if err := ep.Put(pe, data[me], off, streamBlock(me, pe, k)); err != nil {
						errs[me] = err
						return
					}
					old, err := ep.FetchAtomic(pe, ctr[me], 8*me, core.AtomicAdd, core.Uint64, 1, 0)
					if err != nil {
						errs[me] = err
						return
					}
					if seen[pe][old] {
						errs[me] = fmt.Errorf("PE %d: a fetch-add on PE %d answered %d twice, or applied twice", me, pe, old)
						return
					}
					seen[pe][old] = true
				}
			}
			errs[me] = ep.Quiet()
		})
	}
	wg.Wait()
	return errs
}

// newRegions creates one region of size on every PE of the composite.
func newRegions(t testing.TB, doms []core.Domain, size int) []core.Region {
	rs := make([]core.Region, len(doms))
	var wg sync.WaitGroup
	for i, d := range doms {
		wg.Go(func() {
			r, err := d.NewRegion(size)
			if err != nil {
				t.Error(err)
			}
			rs[i] = r
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	return rs
}

// A link cut in the middle of a stream of puts and fetch-adds between
// every pair of PEs on different hosts, 3 and 4 hosts of 2 PEs: the cut
// is the link's, so every lane routes round it, and every block arrives
// whole, every fetch-add is applied and answered once, and nothing is
// dropped.
func TestLanesRerouteStream(t *testing.T) {
	for _, hosts := range []int{3, 4} {
		t.Run(fmt.Sprintf("%dx2", hosts), func(t *testing.T) { testLanesRerouteStream(t, hosts) })
	}
}

func testLanesRerouteStream(t *testing.T, hosts int) {
	const per, steps = 2, 16
	n := hosts * per
	doms, rings := openLanesT(t, hosts, per, map[string]string{paramSlot.Env: "16K"})
	data := newRegions(t, doms, n*steps*streamStride)
	ctr := newRegions(t, doms, 8*n)
	// Half-way, PE 0 cuts link 1, which joins host 1's Right port and
	// host 2's Left, as fault injection does: through lane 0's port of
	// host 1. Every PE goes on once its own lane routes round the cut,
	// while the others' transfers are in flight, so the second half of
	// every lane's stream goes the long way.
	var cutOnce sync.Once
	mid := func(me int) error {
		var err error
		cutOnce.Do(func() {
			port := rings[1*per+0].proto.(*ringProto).link(ntb.Right).port
			err = port.(linkForcer).SetLinkDown(true)
		})
		if err != nil {
			return err
		}
		deadline := time.Now().Add(10 * time.Second)
		var pause core.Backoff
		for rings[me].proto.(*ringProto).cut.Load() != 1 {
			if time.Now().After(deadline) {
				return fmt.Errorf("PE %d: its lane did not route round the cut within 10s", me)
			}
			pause.Pause()
		}
		return nil
	}
	errs := laneStream(doms, per, data, ctr, steps, mid)
	for pe, err := range errs {
		require.NoError(t, err, "PE %d", pe)
	}
	require.Eventually(t, func() bool {
		for _, d := range rings {
			if d.proto.(*ringProto).cut.Load() != 1 {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "every lane of every host routes round the cut")
	for pe, d := range rings {
		require.NoError(t, d.err(), "PE %d", pe)
		require.Zero(t, d.drops.Load(), "PE %d dropped transfers", pe)
	}
	checkLaneStream(t, per, data, ctr, steps, 1)

	// The link comes back: every lane repairs it and routes the short way
	// again, and a second stream (the counters go on) arrives whole.
	port := rings[1*per+0].proto.(*ringProto).link(ntb.Right).port
	require.NoError(t, port.(linkForcer).SetLinkDown(false))
	require.Eventually(t, func() bool {
		for _, d := range rings {
			if d.proto.(*ringProto).cut.Load() != noCut {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "every lane of every host routes the short way again")
	errs = laneStream(doms, per, data, ctr, steps, func(int) error { return nil })
	for pe, err := range errs {
		require.NoError(t, err, "PE %d, after the repair", pe)
	}
	checkLaneStream(t, per, data, ctr, steps, 2)
	for pe, d := range rings {
		require.NoError(t, d.err(), "PE %d", pe)
		require.Zero(t, d.drops.Load(), "PE %d dropped transfers", pe)
	}
}

// checkLaneStream checks the blocks and counters of rounds laneStreams.
func checkLaneStream(t *testing.T, per int, data, ctr []core.Region, steps, rounds int) {
	t.Helper()
	n := len(data)
	for pe := range n {
		for src := range n {
			if src/per == pe/per {
				continue
			}
			require.Equal(t, uint64(rounds*steps), mem.LoadValue(ctr[pe].Local(), 8*src, 8), "PE %d's counter of PE %d", pe, src)
			for k := range steps {
				off := (src*steps + k) * streamStride
				want := streamBlock(src, pe, k)
				require.Equal(t, want, data[pe].Local()[off:off+len(want)], "PE %d, block %d of PE %d", pe, k, src)
			}
		}
	}
}

// With lanes, the domain's barrier is the job's, not one lane's: no PE
// leaves it before the last PE, of the other lane, entered it.
func TestLanesBarrierIsTheJobs(t *testing.T) {
	_, rings := openLanesT(t, 2, 2, nil)
	var others sync.WaitGroup
	others.Add(len(rings) - 1)
	var entered atomic.Bool
	errs := make([]error, len(rings))
	var wg sync.WaitGroup
	for pe, d := range rings {
		wg.Go(func() {
			if pe == len(rings)-1 {
				others.Wait()
				for range 1000 { // let a barrier of one lane finish first
					runtime.Gosched()
				}
				entered.Store(true)
				errs[pe] = d.Barrier()
				return
			}
			others.Done()
			errs[pe] = d.Barrier()
			if !entered.Load() {
				errs[pe] = fmt.Errorf("PE %d left the barrier before the last PE entered it", pe)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// A loss every PE learns through the bootstrap names a PE of the job;
// the ring's alarm names hosts. A lane's ring that fails on it (a wait
// ended by the bootstrap's loss) keeps the PE's name and rings no alarm,
// which would make its neighbours on the lane fail naming a host whose
// PEs live: with 3 hosts of 2 PEs, PE 5 is no host, and PE 1 would have
// been read as host 1.
func TestLanesBootstrapLossNamesThePE(t *testing.T) {
	for _, lostPE := range []int{5, 1} {
		t.Run(fmt.Sprintf("PE%d", lostPE), func(t *testing.T) {
			_, rings := openLanesT(t, 3, 2, nil)
			core.ReportLost(rings[0].boot, &core.PeerLostError{PE: lostPE, Reason: "its process vanished"})
			known := rings[0].boot.Err()
			require.Error(t, known)
			rings[0].fail(fmt.Errorf("forward: %w", known))

			var pl *core.PeerLostError
			require.ErrorAs(t, rings[0].Err(), &pl)
			require.Equal(t, lostPE, pl.PE, "the ring's failure names the PE the bootstrap lost: %v", rings[0].Err())
			// The alarm goes with taking the ring's links down (broken):
			// links still up say that none rang, at once, where the
			// neighbours would hear it only some doorbell polls later.
			for _, l := range rings[0].proto.(*ringProto).all() {
				require.NotZero(t, atomic.LoadUint32(mem.Word32(l.words, wordUp)), "PE 0's %s link", l.side)
			}
		})
	}
}

// The seeds' protocol runs one PE per host: with several, every PE fails
// Open naming the variable and what it allows.
func TestLanesSeedRefused(t *testing.T) {
	const n, per = 4, 2
	boots := bootstrap.NewLocal(n)
	shm, job := t.TempDir(), randomID()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = hybrid.Compose(provider{}).Open(&core.Config{Bootstrap: boots[i], JobID: job,
				Env:    testEnv(shm, map[string]string{paramProtocol.Env: protoSeed}),
				HostID: fmt.Sprintf("seed-host-%d", i/per)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		var env *core.EnvError
		require.ErrorAs(t, err, &env, "PE %d", i)
		require.Equal(t, paramProtocol.Env, env.Var, "PE %d", i)
	}
}

// Through the composite, a region is loopback's memory: each PE's part is
// registered with the host's device and every lane's node windows every
// PE of its host, so a put to either PE of a neighbour host is a store
// through a window, and what it stores is what every PE of that host
// reads, the target's own view and its host neighbour's (loopback's
// mapping).
func TestLanesPutThroughWindow(t *testing.T) {
	doms, rings := openLanesT(t, 2, 2, nil)
	rs := newRegions(t, doms, 4096)
	for pe, d := range rings {
		p := d.proto.(*ringProto)
		p.exportMu.Lock()
		m := p.exported[p.window(0, d.lane)]
		p.exportMu.Unlock()
		require.NotNil(t, m, "PE %d: region 0 not registered with the device", pe)
		require.Equal(t, &rs[pe].Local()[0], &m.Bytes()[0], "PE %d: the device's memory is not the region's", pe)
	}
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	defer ep.Close()
	const off, val = 64, 0x1122334455667788
	// The ring endpoint's direct path, as the composite reaches it.
	reg := rings[0].regions[0]
	done, err := rings[0].proto.(*ringProto).putDirect(1, 0, reg, off, binary.LittleEndian.AppendUint64(nil, val))
	require.NoError(t, err)
	require.True(t, done, "the put to PE 2 did not go through the window")
	done, err = rings[0].proto.(*ringProto).putDirect(1, 1, reg, off+8, binary.LittleEndian.AppendUint64(nil, val))
	require.NoError(t, err)
	require.True(t, done, "the put to PE 3 (the other lane) did not go through PE 2's window onto it")
	require.NoError(t, ep.Quiet())
	require.Equal(t, uint64(val), binary.LittleEndian.Uint64(rs[2].Local()[off:]), "PE 2's own view")
	view := doms[3].(core.DirectAccess).PeerBytes(2, rs[3])
	require.Equal(t, uint64(val), binary.LittleEndian.Uint64(view[off:]), "PE 3's view of PE 2")
	require.Equal(t, uint64(val), binary.LittleEndian.Uint64(rs[3].Local()[off+8:]), "PE 3's own view")
	// And the endpoint puts the same way, to either PE of the other host.
	for _, pe := range []int{2, 3} {
		require.NoError(t, ep.Put(pe, rs[0], 128, []byte{byte(pe), 2, 3, 4, 5, 6, 7, 8}))
	}
	require.NoError(t, ep.Quiet())
	for _, pe := range []int{2, 3} {
		require.Equal(t, byte(pe), rs[pe].Local()[128], "PE %d", pe)
	}
}
