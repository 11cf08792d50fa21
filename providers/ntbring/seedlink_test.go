package ntbring

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

// errTestDone ends the waits a test started.
var errTestDone = errors.New("test done")

// waitUntil spins until cond holds or bound passes, yielding the CPU.
func waitUntil(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
		runtime.Gosched()
	}
}

// A transfer whose doorbell never reaches the neighbour leaves its
// metadata group busy for good. Every sender that needs the group then
// fails with a lost peer within the timeout, not later, whether it
// waits for the group to be freed or for another sender here that holds
// it; and slots of the other group go on working.
func TestSeedBusyGroupEndsSendsInTime(t *testing.T) {
	const timeout = 300 * time.Millisecond
	// Four slots share the link's two groups: slots 0 and 2 use group 0.
	doms := openRingT(t, 2, map[string]string{paramProtocol.Env: protoSeed, paramWorkers.Env: "4", paramTimeout.Env: timeout.String()})
	l := doms[0].proto.(*seed).links[ntb.Right]
	require.Equal(t, 2, l.groups)

	// Only slots 0 and 2 stay free, in that order.
	held := make([]int, 0, 4)
	for range 4 {
		held = append(held, <-l.free)
	}
	require.Equal(t, []int{0, 1, 2, 3}, held)
	l.free <- 0
	l.free <- 2
	defer func() { l.free <- 1; l.free <- 3 }()

	// Group 0 of host 1 busy, its doorbell lost.
	lost := meta{kind: kindPut, slot: 0, src: 0, dst: 1, size: 0, tag: 1}
	w := lost.encode()
	require.NoError(t, writePeerSpads(l.port, 0, w[:]))

	// Sender a holds group 0, waiting (for a minute) for it to be freed.
	done := make(chan struct{})
	abort := func() error {
		select {
		case <-done:
			return errTestDone
		default:
			return nil
		}
	}
	aErr := make(chan error, 1)
	stats := l.port.(ntb.Inspector).Stats
	reads := stats().PeerSpadReads
	go func() { aErr <- l.send(meta{kind: kindPut, dst: 1, tag: 2}, nil, time.Minute, abort) }()
	waitUntil(t, 10*time.Second, "sender a polls group 0", func() bool {
		return len(l.free) == 1 && stats().PeerSpadReads > reads+1
	})

	// Sender b gets slot 2, of group 0 too: it ends within its own timeout.
	bErr := make(chan error, 1)
	start := time.Now()
	go func() { bErr <- l.send(meta{kind: kindPut, dst: 1, tag: 3}, nil, timeout, abort) }()
	bound := time.NewTimer(10 * timeout)
	defer bound.Stop()
	select {
	case err := <-bErr:
		require.ErrorIs(t, err, core.ErrPeerLost)
		require.ErrorContains(t, err, "no scratchpad slot freed")
		require.Less(t, time.Since(start), 4*timeout, "sender b's wait")
	case <-bound.C:
		close(done)
		<-aErr
		<-bErr
		t.Fatalf("sender b still waits for group 0 after %v; its timeout is %v", time.Since(start), timeout)
	}
	close(done)
	require.ErrorIs(t, <-aErr, errTestDone)

	// Sender a, with the operation's own timeout, ends within it too.
	start = time.Now()
	err := l.send(meta{kind: kindPut, dst: 1, tag: 4}, nil, timeout, func() error { return nil })
	require.ErrorIs(t, err, core.ErrPeerLost)
	require.Less(t, time.Since(start), 4*timeout)
}

// The same through the endpoint: with both groups of the link busy and
// their doorbells lost, every one of several concurrent atomics fails
// with a lost peer within the timeout.
func TestSeedLostDoorbellsArePeerLost(t *testing.T) {
	const timeout = 300 * time.Millisecond
	doms, err := openRingErr(t, 2, map[string]string{paramProtocol.Env: protoSeed, paramWorkers.Env: "4", paramTimeout.Env: timeout.String()})
	require.NoError(t, err)
	rs := regions(t, doms, 4096)
	l := doms[0].proto.(*seed).links[ntb.Right]
	for g := range l.groups {
		w := (&meta{kind: kindPut, slot: uint8(g), src: 0, dst: 1, tag: uint32(g + 1)}).encode()
		require.NoError(t, writePeerSpads(l.port, g*metaWords, w[:]))
	}
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = ep.Atomic(1, rs[0], 8*i, core.AtomicAdd, core.Uint64, 1) })
	}
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, core.ErrPeerLost, "atomic %d", i)
	}
	require.Less(t, time.Since(start), 4*timeout)
	// Closing host 0 reports the atomics that failed.
	closed := make([]error, 2)
	each(doms, func(d *domain) { closed[d.rank] = d.Close() })
	require.ErrorIs(t, closed[0], core.ErrPeerLost)
}

// Many senders on both hosts at once, eight workers sharing the two
// scratchpad groups of each link, requests and their answers crossing:
// no transfer is lost (every operation completes, each cell ends at the
// exact count) and none waits out the timeout.
func TestSeedSharedGroupsLoseNothing(t *testing.T) {
	const (
		senders = 4
		ops     = 1500
	)
	for _, workers := range []string{"4", "8"} {
		t.Run("workers="+workers, func(t *testing.T) {
			doms := openRingT(t, 2, map[string]string{paramProtocol.Env: protoSeed, paramWorkers.Env: workers, paramSlot.Env: "4K"})
			rs := regions(t, doms, 4096)
			each(doms, func(d *domain) {
				var wg sync.WaitGroup
				for s := range senders {
					wg.Go(func() {
						ep, err := d.NewEndpoint(core.EndpointOptions{})
						if err != nil {
							t.Error(err)
							return
						}
						for i := range ops {
							if i%4 == 3 {
								_, err = ep.FetchAtomic(1-d.rank, rs[d.rank], 8*s, core.AtomicAdd, core.Uint64, 1, 0)
							} else {
								err = ep.Atomic(1-d.rank, rs[d.rank], 8*s, core.AtomicAdd, core.Uint64, 1)
							}
							if err != nil {
								t.Errorf("host %d, sender %d, op %d: %v", d.rank, s, i, err)
								return
							}
						}
						if err := ep.Quiet(); err != nil {
							t.Errorf("host %d, sender %d: quiet: %v", d.rank, s, err)
						}
					})
				}
				wg.Wait()
			})
			require.False(t, t.Failed())
			each(doms, func(d *domain) { require.NoError(t, d.Barrier()) })
			for h, r := range rs {
				for s := range senders {
					require.Equal(t, uint64(ops), mem.LoadValue(r.Local(), 8*s, 8), "host %d, cell of sender %d", h, s)
				}
			}
		})
	}
}
