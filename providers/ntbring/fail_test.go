package ntbring

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// Hosts configured differently find out in the scratchpad hello, all of
// them, with an error naming the settings.
func TestOpenMismatchedHosts(t *testing.T) {
	for proto, param := range map[string]core.Param{protoSeed: paramWorkers, protoRing: paramSlot} {
		_, err := openRingErr(t, 3, map[string]string{paramProtocol.Env: proto}, func(rank int) map[string]string {
			return map[string]string{param.Env: fmt.Sprintf("%dK", 4+4*(rank%2))}
		})
		require.ErrorIs(t, err, core.ErrInvalid, proto)
		require.ErrorContains(t, err, param.Env, proto)
	}
}

// protocols runs f as a subtest for each protocol.
func protocols(t *testing.T, f func(t *testing.T, env map[string]string)) {
	for _, proto := range []string{protoRing, protoSeed} {
		t.Run(proto, func(t *testing.T) { f(t, map[string]string{paramProtocol.Env: proto}) })
	}
}

// A host whose ports vanish (as when its process dies) is a lost peer to
// the others within the timeout, and operations on the rest of the ring
// then fail instead of hanging.
func TestDeadHostIsPeerLost(t *testing.T) { protocols(t, testDeadHostIsPeerLost) }

func testDeadHostIsPeerLost(t *testing.T, env map[string]string) {
	const timeout = 500 * time.Millisecond
	env[paramTimeout.Env] = timeout.String()
	doms, err := openRingErr(t, 4, env)
	require.NoError(t, err)
	rs := regions(t, doms, 4096)
	// Host 2 dies: its goroutines stop and its ports go away without a
	// goodbye.
	require.NoError(t, doms[2].proto.close())

	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	start := time.Now()
	_, err = ep.FetchAtomic(2, rs[0], 0, core.AtomicAdd, core.Uint64, 1, 0)
	require.ErrorIs(t, err, core.ErrPeerLost)
	require.Less(t, time.Since(start), 4*timeout)
	var pl *core.PeerLostError
	require.ErrorAs(t, err, &pl)

	// Host 1 is a neighbour of host 2: its link event fails it outright.
	ep1, err := doms[1].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return ep1.Put(0, rs[1], 0, []byte{1}) != nil
	}, 4*timeout, 10*time.Millisecond)
	require.ErrorIs(t, ep1.Put(0, rs[1], 0, []byte{1}), core.ErrPeerLost)

	// The bootstrap learns of the death too (the launcher's store would):
	// Close of the others reports it instead of waiting for the dead host.
	doms[2].boot.(interface{ Kill() }).Kill()
	errs := make(chan error, 3)
	for i, d := range doms {
		if i != 2 {
			go func() { errs <- d.Close() }()
		}
	}
	for range 3 {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, core.ErrPeerLost)
		case <-time.After(10 * timeout):
			t.Fatal("close hangs on a ring with a dead host")
		}
	}
}

// Garbage in a neighbour's scratchpads is dropped, whatever it says, and
// the ring goes on working; a well-formed transfer aimed outside a region
// writes nothing.
func TestGarbageInScratchpadsIsDropped(t *testing.T) {
	doms := openRingT(t, 3, map[string]string{paramProtocol.Env: protoSeed})
	rs := regions(t, doms, 4096)
	from := doms[0].proto.(*seed).links[ntb.Right]
	forge := func(w [metaWords]uint32) {
		t.Helper()
		for i := metaWords - 1; i >= 0; i-- {
			require.NoError(t, from.port.PeerSpadWrite(i, w[i]))
		}
		require.NoError(t, from.port.PeerDBSet(1))
	}
	drops := func() uint64 { return doms[1].drops.Load() }

	forge([metaWords]uint32{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF})
	require.Eventually(t, func() bool { return drops() == 1 }, 5*time.Second, time.Millisecond)
	// A put to host 1 at an offset past its region: nacked, and the nack
	// for a tag nobody waits for is dropped back at host 0.
	bad := meta{kind: kindPut, src: 0, dst: 1, off: 4090, size: 100, tag: 12345}
	forge(bad.encode())
	require.Eventually(t, func() bool { return doms[0].drops.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, make([]byte, 4096), rs[1].Local())

	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	require.NoError(t, ep.Put(1, rs[0], 8, []byte{7}))
	require.NoError(t, ep.Quiet())
	require.Equal(t, byte(7), rs[1].Local()[8])
	require.Equal(t, uint64(1), drops())
}

// Under the seed protocol a link the device takes down (fault injection)
// fails the hosts at its two ends with a peer-lost error naming the host
// across it, and the others through the broken-ring alarm.
func TestLinkDownFault(t *testing.T) {
	doms, err := openRingErr(t, 3, map[string]string{"GOSHMEM_NTB_FAULT": "link=0:down@200ms", paramProtocol.Env: protoSeed})
	require.NoError(t, err)
	rs := regions(t, doms, 64)
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return doms[0].err() != nil && doms[1].err() != nil }, 5*time.Second, 5*time.Millisecond)
	var pl *core.PeerLostError
	require.ErrorAs(t, ep.Put(1, rs[0], 0, []byte{1}), &pl)
	require.Equal(t, 1, pl.PE, "host 0 lost host 1, across link 0")
	require.ErrorAs(t, doms[1].err(), &pl)
	require.Equal(t, 0, pl.PE)
	require.ErrorIs(t, doms[0].Err(), core.ErrPeerLost, "core.Failer reports the failure")
	// Host 2's links are up, but the ring is broken: the alarm tells it.
	require.Eventually(t, func() bool { return doms[2].err() != nil }, 5*time.Second, 5*time.Millisecond)
	require.ErrorAs(t, doms[2].err(), &pl)
	require.Contains(t, []int{0, 1}, pl.PE, "host 2 learns of the break between 0 and 1")
	errs := make([]error, len(doms))
	each(doms, func(d *domain) { errs[d.rank] = d.Close() })
	for i, err := range errs {
		require.ErrorIs(t, err, core.ErrPeerLost, "close of host %d", i)
	}
}

// A host far from a dead one learns of the death from the alarm, within
// the time the links take to notice, and a ring barrier it waits in ends.
func TestAlarmEndsBarrier(t *testing.T) {
	protocols(t, func(t *testing.T, env map[string]string) {
		for _, bar := range []string{barrierRing, barrierDissemination} {
			env[paramBarrier.Env] = bar
			t.Run(bar, func(t *testing.T) { testAlarmEndsBarrier(t, env) })
		}
	})
}

func testAlarmEndsBarrier(t *testing.T, env map[string]string) {
	doms, err := openRingErr(t, 5, env)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- doms[0].Barrier() }() // waits for START from host 4
	require.NoError(t, doms[2].proto.close()) // host 2 dies
	select {
	case err := <-done:
		var pl *core.PeerLostError
		require.ErrorAs(t, err, &pl)
		require.Equal(t, 2, pl.PE)
	case <-time.After(20 * time.Second): // a bound for a loaded machine under -race
		t.Fatal("host 0's barrier did not end when host 2 died")
	}
	// The others hear of it from the alarm, which travels the ring: host
	// 0's barrier may end before it reaches them all.
	for i, d := range doms {
		if i != 2 {
			require.Eventually(t, func() bool { return errors.Is(d.err(), core.ErrPeerLost) }, 20*time.Second, time.Millisecond, "host %d", i)
		}
	}
	doms[2].boot.(interface{ Kill() }).Kill()
	each(doms, func(d *domain) {
		if d.rank != 2 {
			require.ErrorIs(t, d.Close(), core.ErrPeerLost)
		}
	})
}
