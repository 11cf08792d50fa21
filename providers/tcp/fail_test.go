package tcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// die ends d as a crash would: its connections close without a clean
// close and its bootstrap member is lost.
func die(d *domain) {
	d.boot.(*bootstrap.Local).Kill()
	d.closed.Store(true)
	for _, c := range d.conns {
		if c != nil {
			_ = c.nc.Close()
		}
	}
}

// outstanding counts c's requests waiting for a reply.
func outstanding(c *conn) int { return c.reqs.outstanding() }

// A PE that dies with a get of PE 0's outstanding: the get, later
// operations to it and a quiet over puts to it fail with a
// *core.PeerLostError naming it; PE 0 and PE 1 carry on.
func TestPeerLost(t *testing.T) {
	doms, _ := openJob(t, 3, nil)
	regs := newRegions(t, doms, 4096)
	ep := newEndpoint(t, doms[0])

	// Stall PE 2's progress while it answers, so the get is in flight
	// when PE 2 dies.
	stalled := doms[2].conns[0]
	stalled.q.mu.Lock()
	got := make(chan error, 1)
	go func() { got <- ep.Get(2, regs[0], 0, make([]byte, 8)) }()
	if !assert.Eventually(t, func() bool { return outstanding(doms[0].conns[2]) != 0 }, 10*time.Second, time.Millisecond,
		"the get to PE 2 is in flight") {
		stalled.q.mu.Unlock()
		t.FailNow()
	}
	die(doms[2])
	stalled.q.mu.Unlock()

	var lost *core.PeerLostError
	err := <-got
	require.ErrorIs(t, err, core.ErrPeerLost)
	require.ErrorAs(t, err, &lost)
	require.Equal(t, 2, lost.PE)

	err = ep.Put(2, regs[0], 0, []byte{1})
	if err == nil {
		err = ep.Quiet()
	}
	require.ErrorIs(t, err, core.ErrPeerLost, "put and quiet to the dead PE")
	_, err = ep.FetchAtomic(2, regs[0], 0, core.AtomicAdd, core.Uint64, 1, 0)
	require.ErrorIs(t, err, core.ErrPeerLost)

	require.NoError(t, ep.Put(1, regs[0], 8, []byte("alive")))
	require.NoError(t, ep.Quiet())
	back := make([]byte, 5)
	require.NoError(t, ep.Get(1, regs[0], 8, back))
	require.Equal(t, "alive", string(back))
}

// A frame naming memory past the target's region drops the connection,
// with a log line naming the peer; nothing is written; the operation
// pending on it fails with the peer-lost error, and so do later ones.
func TestCorruptFrame(t *testing.T) {
	doms, logs := openJob(t, 2, nil)
	regs := newRegions(t, doms, 4096)
	ep := newEndpoint(t, doms[0])

	bad := frame(header{op: opPut, region: 0, off: 1 << 20, arg: 8}, []byte("overflow"))
	c := doms[1].conns[0]
	c.q.mu.Lock()
	c.q.out = append(c.q.out, bad...)
	c.q.kickLocked()
	c.q.mu.Unlock()
	// The reply to this get is queued behind the bad frame.
	require.NoError(t, ep.GetNBI(1, regs[0], 0, make([]byte, 8)))
	err := ep.Quiet()
	require.ErrorIs(t, err, core.ErrPeerLost)
	require.ErrorContains(t, err, "broke the protocol")
	require.Contains(t, logs.String(), "peer=1")
	require.Contains(t, logs.String(), "lies outside region 0")
	require.Equal(t, make([]byte, 4096), regs[0].mem, "nothing was written")
	require.ErrorIs(t, ep.Put(1, regs[0], 0, []byte{1}), core.ErrPeerLost)
}

// A Counter balances once Quiet returns, for every kind of operation.
func TestCounterBalances(t *testing.T) {
	doms, _ := openJob(t, 2, nil)
	regs := newRegions(t, doms, 1<<20)
	ep := newEndpoint(t, doms[0])
	big := make([]byte, 256<<10) // sent from where it lies
	require.NoError(t, ep.Put(1, regs[0], 0, big))
	require.NoError(t, ep.Put(1, regs[0], 0, []byte{1, 2, 3}))
	require.NoError(t, ep.PutValue(1, regs[0], 8, 9, 8))
	require.NoError(t, ep.Atomic(1, regs[0], 16, core.AtomicAdd, core.Uint64, 1))
	require.NoError(t, ep.GetNBI(1, regs[0], 0, make([]byte, 300<<10)))
	require.NoError(t, ep.Quiet())
	ctr := ep.Counter()
	require.Equal(t, uint64(5), ctr.Issued())
	require.Equal(t, ctr.Issued(), ctr.Completed())
	require.Zero(t, ctr.Errors())
}

// Two PEs that read from and write to each other as fast as they can,
// through socket buffers so small that most writes block: every
// operation completes, with the right data, so neither PE's progress ever
// waits for the other's (the reader writes only what the socket takes at
// once and leaves the rest to the writer).
func TestBothWaysSaturated(t *testing.T) {
	doms, _ := openJob(t, 2, map[string]string{paramSockBuf.Env: "32K"})
	const size = 1 << 20
	regs := newRegions(t, doms, size)
	for pe, r := range regs {
		for i := range r.mem {
			r.mem[i] = byte(i*7 + pe)
		}
	}
	each(doms, func(d *domain) {
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		if !assert.NoError(t, err) {
			return
		}
		peer := 1 - d.rank
		big := make([]byte, size/4)
		small := make([]byte, 64)
		for round := range 10 {
			// Large gets answered from the peer's heap by reference, small
			// ones copied, puts into the upper half both ways.
			assert.NoError(t, ep.GetNBI(peer, regs[d.rank], 0, big))
			for i := range 50 {
				off := (round*50 + i) * 64 % (size / 2)
				assert.NoError(t, ep.Get(peer, regs[d.rank], off, small))
				assert.NoError(t, ep.Put(peer, regs[d.rank], size/2+off, small))
			}
			assert.NoError(t, ep.Quiet())
			for i, b := range big {
				if b != byte(i*7+peer) {
					t.Errorf("PE %d round %d: byte %d of the large get is %d", d.rank, round, i, b)
					return
				}
			}
		}
	})
}

// PE 1 stops reading (its progress is held up) while PE 0 answers 1 MiB
// of its gets: PE 0's replies fill both sockets' buffers, and PE 0's
// progress still applies the puts PE 1 sends meanwhile, because it never
// waits to write.
func TestReaderNeverBlocks(t *testing.T) {
	doms, _ := openJob(t, 2, map[string]string{paramSockBuf.Env: "32K"})
	regs := newRegions(t, doms, 1<<20)
	for i := range regs[0].mem {
		regs[0].mem[i] = byte(i * 13)
	}
	ep := newEndpoint(t, doms[1])
	const n, each = 64, 16 << 10
	dst := make([]byte, n*each)
	for i := range n {
		require.NoError(t, ep.GetNBI(0, regs[1], i*each, dst[i*each:(i+1)*each]))
	}
	// PE 1's progress blocks at the first reply, taking its request.
	held := doms[1].conns[0]
	held.reqs.mu.Lock()
	require.NoError(t, ep.Put(0, regs[1], 64, []byte("still applied")))
	require.Eventually(t, func() bool { return string(regs[0].mem[64:77]) == "still applied" },
		time.Minute, time.Millisecond, "PE 0 stopped applying puts while its replies could not be written")
	held.reqs.mu.Unlock()
	require.NoError(t, ep.Quiet())
	for i := range dst {
		if i >= 64 && i < 77 {
			continue // PE 1 read these before or after its put: either is right
		}
		require.Equal(t, byte(i*13), dst[i], "byte %d", i)
	}
}
