package ntbring

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

// waitCut waits until every host routes as if link k were the cut (noCut:
// the ring is whole) and returns how long that took.
func waitCut(t *testing.T, doms []*domain, k int32) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		all := true
		for _, d := range doms {
			all = all && d.proto.(*ringProto).cut.Load() == k
		}
		if all {
			return time.Since(start)
		}
		require.Less(t, time.Since(start), 10*time.Second, "every host to see cut %d", k)
		runtime.Gosched()
	}
}

// A link that goes down and comes back up in the middle of a stream of
// puts and fetch-adds from every host to every other is used again: every
// block arrives whole and every fetch-add is applied and answered once,
// across both the cut and the repair; a transfer across the link then
// takes it, not the long way; and a later cut of another link is routed
// round like a first one.
func TestLinkRepairedIsUsedAgain(t *testing.T) {
	const n, steps = 4, 16
	doms := openRingT(t, n, map[string]string{paramSlot.Env: "16K", paramTimeout.Env: "5s"})
	data := regions(t, doms, n*steps*streamStride)
	ctr := regions(t, doms, 8*n)
	old := doms[1].proto.(*ringProto).link(ntb.Right)
	checkStream(t, doms, data, ctr, steps, stream(doms, data, ctr, steps, func() {
		forceLink(t, doms, 1, true)
		waitCut(t, doms, 1)
		forceLink(t, doms, 1, false)
		t.Logf("link-up to every host routing the short way: %v", waitCut(t, doms, noCut))
	}))

	// Host 1's fetch-add on host 2 crosses link 1, on its new ring.
	p1 := doms[1].proto.(*ringProto)
	l, back := p1.link(ntb.Right), p1.link(ntb.Left)
	require.NotSame(t, old, l, "link 1 has a new ring")
	require.True(t, old.down.Load(), "the old ring stays retired")
	require.NotEqual(t, old.epoch, l.epoch, "the new ring has a new epoch")
	require.NotNil(t, l.directWindow(0), "host 2's window onto region 0 is set again: puts land directly")
	next := func(l *rlink) uint32 {
		l.tx.mu.Lock()
		defer l.tx.mu.Unlock()
		return l.tx.next
	}
	right, left := next(l), next(back)
	ep, err := doms[1].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	_, err = ep.FetchAtomic(2, ctr[1], 0, core.AtomicAdd, core.Uint64, 1, 0)
	require.NoError(t, err)
	require.Equal(t, right+1, next(l), "the request took the repaired link")
	require.Equal(t, left, next(back), "nothing went the long way")

	// A later cut of another link is a first cut again.
	data2 := regions(t, doms, n*steps*streamStride)
	ctr2 := regions(t, doms, 8*n)
	checkStream(t, doms, data2, ctr2, steps, stream(doms, data2, ctr2, steps, func() { forceLink(t, doms, 3, true) }))
	waitCut(t, doms, 3)
}

// A link the device takes down and brings back up (fault injection) is
// repaired: its ends get a new ring, every host routes the short way, and
// puts and fetch-adds across it work.
func TestLinkUpFaultRepairs(t *testing.T) {
	doms := openRingT(t, 3, map[string]string{"GOSHMEM_NTB_FAULT": "link=0:down@50ms;link=0:up@250ms"})
	rs := regions(t, doms, 64)
	first := doms[0].proto.(*ringProto).link(ntb.Right)
	require.Eventually(t, func() bool { return first.down.Load() }, 10*time.Second, time.Millisecond, "the cut")
	require.Eventually(t, func() bool {
		for _, d := range doms {
			p := d.proto.(*ringProto)
			if p.cut.Load() != noCut || p.link(ntb.Right).down.Load() || p.link(ntb.Left).down.Load() {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "the repair")
	each(doms, func(d *domain) {
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		require.NoError(t, err)
		for pe := range 3 {
			require.NoError(t, ep.PutValue(pe, rs[d.rank], 8*d.rank, uint64(100+d.rank), 8))
			_, err := ep.FetchAtomic(pe, rs[d.rank], 32, core.AtomicAdd, core.Uint64, 1, 0)
			require.NoError(t, err)
		}
		require.NoError(t, ep.Quiet())
		require.NoError(t, d.Barrier())
	})
	for pe, d := range doms {
		require.NoError(t, d.err())
		require.Zero(t, d.drops.Load(), "host %d dropped transfers", pe)
		for src := range 3 {
			require.Equal(t, uint64(100+src), mem.LoadValue(rs[pe].Local(), 8*src, 8))
		}
		require.Equal(t, uint64(3), mem.LoadValue(rs[pe].Local(), 32, 8))
	}
}
