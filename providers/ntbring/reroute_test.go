package ntbring

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

// linkForcer is the emulated port's fault injection.
type linkForcer interface{ SetLinkDown(bool) error }

// forceLink takes link k (host k's Right port) of a ring down or up.
func forceLink(t testing.TB, doms []*domain, k int, down bool) {
	t.Helper()
	port := doms[k].proto.(*ringProto).link(ntb.Right).port
	require.NoError(t, port.(linkForcer).SetLinkDown(down))
}

// cutKnown reports whether every host knows link k cut and routes round it.
func cutKnown(doms []*domain, k int) func() bool {
	return func() bool {
		for _, d := range doms {
			if d.proto.(*ringProto).cut.Load() != int32(k) {
				return false
			}
		}
		return true
	}
}

// Sizes of the stream's puts: stores, one DMA, and pieces.
var streamSizes = []int{8, 3000, 9000, 40 << 10}

const streamStride = 40 << 10

func pattern(src, pe, k, j int) byte { return byte(src + 3*pe + 5*k + 7*j + j>>8) }

// streamBlock is the block src puts into pe in step k.
func streamBlock(src, pe, k int) []byte {
	b := make([]byte, streamSizes[k%len(streamSizes)])
	for j := range b {
		b[j] = pattern(src, pe, k, j)
	}
	return b
}

// stream has every host put a distinct block into every other host and
// fetch-add one to its counter there, steps times; cut runs on host 0
// before step steps/2. It returns the first error of each host.
func stream(doms []*domain, data, ctr []core.Region, steps int, cut func()) []error {
	n := len(doms)
	errs := make([]error, n)
	each(doms, func(d *domain) {
		// A host that stops fails its domain, so that no other waits for
		// it in the barrier.
		defer func() {
			if errs[d.rank] != nil {
				d.fail(errs[d.rank])
			}
		}()
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		if err != nil {
			errs[d.rank] = err
			return
		}
		seen := make([]map[uint64]bool, n)
		for k := range steps {
			if d.rank == 0 && k == steps/2 {
				cut()
			}
			for pe := range n {
				if pe == d.rank {
					continue
				}
				if seen[pe] == nil {
					seen[pe] = map[uint64]bool{}
				}
				off := (d.rank*steps + k) * streamStride
				if err := ep.Put(pe, data[d.rank], off, streamBlock(d.rank, pe, k)); err != nil {
					errs[d.rank] = err
					return
				}
				old, err := ep.FetchAtomic(pe, ctr[d.rank], 8*d.rank, core.AtomicAdd, core.Uint64, 1, 0)
				if err != nil {
					errs[d.rank] = err
					return
				}
				if seen[pe][old] || old >= uint64(steps) {
					errs[d.rank] = errors.New("a fetch-add answered twice, or applied twice")
					return
				}
				seen[pe][old] = true
			}
		}
		errs[d.rank] = errors.Join(ep.Quiet(), d.Barrier())
	})
	return errs
}

// A link that goes down in the middle of a stream of puts and fetch-adds
// from every host to every other is routed round: every block arrives
// whole, every fetch-add is applied and answered once, and no answer
// comes twice (a duplicate would be dropped and counted).
func TestRerouteStream(t *testing.T) {
	const n, steps = 4, 24
	doms := openRingT(t, n, map[string]string{paramSlot.Env: "16K"})
	data := regions(t, doms, n*steps*streamStride)
	ctr := regions(t, doms, 8*n)
	checkStream(t, doms, data, ctr, steps, stream(doms, data, ctr, steps, func() { forceLink(t, doms, 1, true) }))
	for pe, d := range doms {
		require.Equal(t, int32(1), d.proto.(*ringProto).cut.Load(), "host %d learned the cut", pe)
	}
}

// checkStream checks what stream did: no host failed or dropped a
// transfer, every block arrived whole and every fetch-add was applied
// once.
func checkStream(t *testing.T, doms []*domain, data, ctr []core.Region, steps int, errs []error) {
	t.Helper()
	for h, err := range errs {
		require.NoError(t, err, "host %d", h)
	}
	for pe, d := range doms {
		require.NoError(t, d.err(), "host %d", pe)
		require.Zero(t, d.drops.Load(), "host %d dropped transfers", pe)
		for src := range doms {
			if src == pe {
				continue
			}
			require.Equal(t, uint64(steps), mem.LoadValue(ctr[pe].Local(), 8*src, 8), "host %d's counter of host %d", pe, src)
			for k := range steps {
				off := (src*steps + k) * streamStride
				want := streamBlock(src, pe, k)
				require.Equal(t, want, data[pe].Local()[off:off+len(want)], "host %d, block %d of host %d", pe, k, src)
			}
		}
	}
}

// A second cut splits the ring: every host fails with a peer-lost error
// within a bounded time, whatever it was doing, and Close reports it.
func TestSecondCutIsPeerLost(t *testing.T) {
	const n, steps = 4, 400
	const timeout = time.Second
	doms, err := openRingErr(t, n, map[string]string{paramSlot.Env: "16K", paramTimeout.Env: timeout.String()})
	require.NoError(t, err)
	data := regions(t, doms, n*steps*streamStride)
	ctr := regions(t, doms, 8*n)
	done := make(chan []error, 1)
	var once sync.Once
	go func() {
		done <- stream(doms, data, ctr, steps, func() {
			once.Do(func() {
				forceLink(t, doms, 0, true)
				assert.Eventually(t, cutKnown(doms, 0), 10*time.Second, time.Millisecond, "every host routes round the first cut")
				forceLink(t, doms, 2, true)
			})
		})
	}()
	select {
	case errs := <-done:
		for h, err := range errs {
			require.ErrorIs(t, err, core.ErrPeerLost, "host %d", h)
		}
	case <-time.After(10 * timeout):
		t.Fatal("hosts of a ring cut twice did not fail")
	}
	for h, d := range doms {
		var pl *core.PeerLostError
		require.ErrorAs(t, d.err(), &pl, "host %d", h)
	}
	each(doms, func(d *domain) { require.ErrorIs(t, d.Close(), core.ErrPeerLost) })
}

// A link the device takes down at a chosen moment (fault injection) is
// routed round: the ring keeps working and no host fails.
func TestLinkDownFaultReroutes(t *testing.T) {
	doms := openRingT(t, 3, map[string]string{"GOSHMEM_NTB_FAULT": "link=0:down@100ms"})
	rs := regions(t, doms, 64)
	require.Eventually(t, func() bool {
		for _, d := range doms {
			if d.proto.(*ringProto).cut.Load() != 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond)
	each(doms, func(d *domain) {
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		require.NoError(t, err)
		for pe := range 3 {
			require.NoError(t, ep.PutValue(pe, rs[d.rank], 8*d.rank, uint64(100+d.rank), 8))
			old, err := ep.FetchAtomic(pe, rs[d.rank], 32, core.AtomicAdd, core.Uint64, 1, 0)
			require.NoError(t, err)
			require.Less(t, old, uint64(3))
		}
		require.NoError(t, ep.Quiet())
		require.NoError(t, d.Barrier())
	})
	for pe, d := range doms {
		require.NoError(t, d.err())
		for src := range 3 {
			require.Equal(t, uint64(100+src), mem.LoadValue(rs[pe].Local(), 8*src, 8))
		}
		require.Equal(t, uint64(3), mem.LoadValue(rs[pe].Local(), 32, 8))
	}
}

// Entries the neighbour never took are resent round the cut, and each is
// acted on once: host 2 sleeps with its ring doorbell from host 1 masked,
// so the fetch-adds host 1 sends it and the landed notice of host 0's
// first relayed put wait unread in its ring when link 1 goes down (the
// later puts' notices are covered by that one: ringProto.notifyLanded).
// The counter ends at the count of operations, and every put landed.
func TestRerouteResendsUnread(t *testing.T) {
	const n, adds, puts = 4, 8, 3
	doms := openRingT(t, n, map[string]string{paramTimeout.Env: "2s"})
	rs := regions(t, doms, 4096)
	l1 := muteRing(t, doms, 2)

	ep1, err := doms[1].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	for range adds {
		require.NoError(t, ep1.Atomic(2, rs[1], 0, core.AtomicAdd, core.Uint64, 1))
	}
	ep0, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	for i := range puts {
		require.NoError(t, ep0.PutNBI(2, rs[0], 64+8*i, []byte{byte(i + 1)}))
	}
	require.Eventually(t, func() bool {
		l1.tx.mu.Lock()
		defer l1.tx.mu.Unlock()
		return l1.tx.pub.at-atomic.LoadUint32(l1.tx.cons) == adds+1
	}, 5*time.Second, time.Millisecond)
	require.Zero(t, mem.LoadValue(rs[2].Local(), 0, 8), "nothing was read before the cut")

	start := time.Now()
	forceLink(t, doms, 1, true)
	require.NoError(t, ep1.Quiet())
	require.NoError(t, ep0.Quiet())
	t.Logf("%d operations resent round the cut and answered %v after it", adds+puts, time.Since(start))
	require.Equal(t, uint64(adds), mem.LoadValue(rs[2].Local(), 0, 8))
	for i := range puts {
		require.Equal(t, byte(i+1), rs[2].Local()[64+8*i])
	}
	for h, d := range doms {
		require.NoError(t, d.err(), "host %d", h)
		require.Zero(t, d.drops.Load(), "host %d dropped transfers", h)
	}
}

// BenchmarkPutAcrossCut is the stream of BenchmarkPutThroughput from host
// 0 to its neighbour, host 1, on a ring of four: over the link between
// them, and with that link cut, round the other way (three hops).
func BenchmarkPutAcrossCut(b *testing.B) {
	for _, cut := range []bool{false, true} {
		b.Run(fmt.Sprintf("size=1M/cut=%v", cut), func(b *testing.B) {
			benchPutStream(b, protoRing, 4, 1, 1<<20, func(doms []*domain) {
				if !cut {
					return
				}
				forceLink(b, doms, 0, true)
				require.Eventually(b, cutKnown(doms, 0), 10*time.Second, time.Millisecond, "every host routes round the cut")
			})
		})
	}
}

// A put through a relay lends its source to the ring instead of copying
// it; if the relay has not taken the pieces by the time the put returns,
// they are copied then, so the source may change at once and what goes
// round a later cut is still what was put: host 1 sleeps with its ring
// doorbell from host 0 masked, host 0 puts three pieces to host 2 and
// overwrites its source, then link 0 goes down and the pieces go the
// other way round.
func TestLentPiecesSurviveReuse(t *testing.T) {
	const n, size = 5, 40 << 10
	doms := openRingT(t, n, map[string]string{paramSlot.Env: "16K", paramTimeout.Env: "2s"})
	rs := regions(t, doms, size)
	l0 := muteRing(t, doms, 1)

	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	src := make([]byte, 0, size)
	for j := range size {
		src = append(src, pattern(0, 2, 1, j))
	}
	want := append([]byte(nil), src...)
	require.NoError(t, ep.Put(2, rs[0], 0, src))
	clear(src)
	require.Zero(t, atomic.LoadUint32(l0.tx.taken), "the relay took nothing")
	require.Equal(t, make([]byte, size), rs[2].Local(), "nothing landed before the cut")

	forceLink(t, doms, 0, true)
	require.NoError(t, ep.Quiet())
	require.Equal(t, want, rs[2].Local())
	for h, d := range doms {
		require.NoError(t, d.err(), "host %d", h)
		require.Zero(t, d.drops.Load(), "host %d dropped transfers", h)
	}
}

// A cut notice that overtakes the repair notice of the link cut before is
// not a second cut: host 3 still holds link 0 cut when it learns of link
// 2's cut, and link 0's repair notice comes after. It routes round link 2
// and stays up. Without the repair notice, the two cuts fail it once
// repairGrace has passed.
func TestCutBeforeRepairNotice(t *testing.T) {
	for _, repaired := range []bool{true, false} {
		doms, err := openRingErr(t, 4, nil)
		require.NoError(t, err)
		p := doms[3].proto.(*ringProto)
		p.cut.Store(0) // link 0 cut, as host 3 last heard
		learnt := time.Now()
		p.learnCut(2)
		// The second cut waits for the first one's repair notice: it
		// neither fails the domain nor replaces the cut it knows.
		require.Equal(t, int32(1), p.awaiting.Load(), "a cut while another is known waits for a repair, repaired=%v", repaired)
		require.NoError(t, doms[3].err(), "a cut while another is known, repaired=%v", repaired)
		require.Equal(t, int32(0), p.cut.Load())
		if !repaired {
			require.Eventually(t, func() bool { return doms[3].err() != nil }, 10*time.Second, time.Millisecond)
			// Not before the repair notice had its grace.
			require.GreaterOrEqual(t, time.Since(learnt), repairGrace, "the second cut failed the domain before repairGrace")
			var pl *core.PeerLostError
			require.ErrorAs(t, doms[3].err(), &pl)
			require.Contains(t, pl.Reason, "cut at links 0 and 2")
			// The others fail as host 3's alarm reaches them: whether
			// before or after they close is a race.
			each(doms, func(d *domain) {
				if err := d.Close(); d.rank == 3 || err != nil {
					require.ErrorIs(t, err, core.ErrPeerLost, "host %d", d.rank)
				}
			})
			continue
		}
		p.learnRepair(0) // the repair notice
		require.Eventually(t, func() bool { return p.cut.Load() == 2 }, 10*time.Second, time.Millisecond)
		// Once its wait has ended, nothing is left that could fail the
		// domain for the cut that was repaired.
		require.Eventually(t, func() bool { return p.awaiting.Load() == 0 }, 10*time.Second, time.Millisecond)
		require.NoError(t, doms[3].err())
		each(doms, func(d *domain) { require.NoError(t, d.Close()) })
	}
}

// muteRing masks the ring doorbell of host's Left port and waits until
// its receiver of that ring sleeps and has stopped looking without a
// doorbell (rxRing.wait): it reads nothing more until unmasked. It
// returns the sending end, the Right link of the host before.
func muteRing(t *testing.T, doms []*domain, host int) *rlink {
	t.Helper()
	require.NoError(t, doms[host].proto.(*ringProto).link(ntb.Left).port.DBSetMask(1<<dbRing))
	l := doms[host-1].proto.(*ringProto).link(ntb.Right)
	require.Eventually(t, func() bool { return atomic.LoadUint32(l.tx.sleep) != 0 }, 5*time.Second, time.Millisecond)
	time.Sleep(2 * lookFast)
	return l
}

// nbiBlock is the block of the non-blocking put tests: put k to pe.
func nbiBlock(pe, k, size int) []byte {
	b := make([]byte, size)
	for j := range b {
		b[j] = pattern(9, pe, k, j)
	}
	return b
}

// putsNBI has host 0 put counts[pe] blocks of size without blocking to
// pe, host 1 (straight into its heap) and host 2 (through host 1's ring),
// at offsets k*size, then runs between before it quiets; it checks every
// block.
func putsNBI(t *testing.T, doms []*domain, rs []core.Region, counts map[int]int, size int, between func()) {
	t.Helper()
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	for k := range max(counts[1], counts[2]) {
		for _, pe := range []int{1, 2} {
			if k < counts[pe] {
				require.NoError(t, ep.PutNBI(pe, rs[0], k*size, nbiBlock(pe, k, size)))
			}
		}
	}
	between()
	require.NoError(t, ep.Quiet())
	for pe, n := range counts {
		for k := range n {
			require.Equal(t, nbiBlock(pe, k, size), rs[pe].Local()[k*size:(k+1)*size], "host %d, block %d", pe, k)
		}
	}
	for h, d := range doms {
		require.NoError(t, d.err(), "host %d", h)
		require.Zero(t, d.drops.Load(), "host %d dropped transfers", h)
	}
}

// Non-blocking puts return before their DMAs are done, and the quiet
// completes them: straight into a neighbour's heap and through a relay.
func TestPutNBIAsync(t *testing.T) {
	const size = 100 << 10
	doms := openRingT(t, 5, map[string]string{paramSlot.Env: "32K"})
	rs := regions(t, doms, 6*size)
	putsNBI(t, doms, rs, map[int]int{1: 6, 2: 6}, size, func() {})
}

// Non-blocking puts still in flight when link 0 goes down are completed
// round the other way: the DMAs into host 1's heap that failed are
// redone, and host 2's pieces that host 1 never took (its doorbell from
// host 0 masked, so it sleeps) are resent from the source they were lent.
// Under the link model host 1's eight puts take over a millisecond, so
// the cut comes while most are queued; host 2's two take 8 of the 12
// entries host 0 may fill.
func TestPutNBIAcrossCut(t *testing.T) {
	const size = 1 << 20
	doms := openRingT(t, 5, map[string]string{paramTimeout.Env: "3s", "GOSHMEM_NTB_MODEL": "gen3x8"})
	rs := regions(t, doms, 8*size)
	l0 := muteRing(t, doms, 1)
	putsNBI(t, doms, rs, map[int]int{1: 8, 2: 2}, size, func() {
		require.Zero(t, atomic.LoadUint32(l0.tx.taken), "host 1 took nothing")
		forceLink(t, doms, 0, true)
	})
}
