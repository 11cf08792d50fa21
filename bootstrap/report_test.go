package bootstrap

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// A member whose process is stopped keeps its connection, so the store
// cannot see it go. A member whose transport saw it go reports it: the
// reporter's collectives end at once, and the store fails the lost member
// for everyone, the launcher (OnEvent) included, and drops its
// connection. The lost member's own later Close does not count it twice.
func TestReportedMemberIsLostForEveryone(t *testing.T) {
	const n = 4
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	require.NoError(t, barrierAll(cs))

	// Ranks 0..2 wait in a barrier that rank 3, "stopped", never enters.
	pending := make(chan error, 3)
	for _, c := range cs[:3] {
		go func() { pending <- c.Barrier() }()
	}
	core.ReportLost(cs[0], &core.PeerLostError{PE: 3, Reason: "the left link went down"})
	for range 3 {
		select {
		case err := <-pending:
			var pl *core.PeerLostError
			require.ErrorAs(t, err, &pl)
			require.Equal(t, 3, pl.PE)
		case <-time.After(watchdog):
			t.Fatal("a barrier waiting for a reported member did not end")
		}
	}
	e := ts.events.wait(t, EventLost, 3)
	require.Equal(t, "PE 0 reports it lost: the left link went down", e.Reason)
	for _, c := range cs[:3] {
		require.ErrorIs(t, c.Err(), core.ErrPeerLost)
		require.ErrorIs(t, c.Barrier(), core.ErrPeerLost, "later collectives fail at once")
	}
	// The reported member learns it was dropped when it runs again.
	require.Eventually(t, func() bool { return cs[3].Err() != nil }, watchdog, time.Millisecond)
	for _, c := range cs {
		c.Close()
	}
	ts.events.waitCount(t, EventFinalized, 3)
	<-ts.srv.Done()
	require.Equal(t, 1, ts.events.count(EventLost), "the reported member is lost once")
}

// ReportLost never waits, and a report after Close is dropped.
func TestReportLostAfterClose(t *testing.T) {
	ts := startStore(t, 2, testSecret)
	cs := dialAll(t, ts.addr, 2, testSecret)
	require.NoError(t, cs[0].Close())
	cs[0].ReportLost(&core.PeerLostError{PE: 1, Reason: "late"})
	require.NoError(t, cs[1].Close())
	ts.events.waitCount(t, EventFinalized, 2)
	require.Zero(t, ts.events.count(EventLost))
}

// Local fails every collective not yet complete, and every later one,
// once a loss is reported, although the lost member never left.
func TestLocalReportLost(t *testing.T) {
	bs := NewLocal(3)
	done := make(chan error, 2)
	for _, b := range bs[:2] {
		go func() { done <- b.Barrier() }()
	}
	core.ReportLost(bs[1], &core.PeerLostError{PE: 2, Reason: "stopped"})
	for range 2 {
		select {
		case err := <-done:
			var pl *core.PeerLostError
			require.ErrorAs(t, err, &pl)
			require.Equal(t, 2, pl.PE)
		case <-time.After(watchdog):
			t.Fatal("a local barrier waiting for a reported member did not end")
		}
	}
	require.ErrorIs(t, bs[0].Err(), core.ErrPeerLost)
	require.ErrorIs(t, bs[2].Barrier(), core.ErrPeerLost)
}
