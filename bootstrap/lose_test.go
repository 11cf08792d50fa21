package bootstrap

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// A launcher that sees a PE's process stopped loses it through Lose: the
// others' waiting collective fails naming it and the reason, later ones
// fail too, and its connection is closed, so it learns should it run
// again. A rank out of range, or one already lost, changes nothing.
func TestServerLose(t *testing.T) {
	const n = 3
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	waiting := make(chan error, 1)
	go func() { waiting <- cs[0].Barrier() }()
	ts.srv.Lose(-1, "nobody")
	ts.srv.Lose(n, "nobody")
	ts.srv.Lose(1, "its process has been stopped")
	select {
	case err := <-waiting:
		var pl *core.PeerLostError
		require.ErrorAs(t, err, &pl)
		require.Equal(t, 1, pl.PE)
		require.Contains(t, pl.Reason, "stopped")
	case <-time.After(watchdog):
		t.Fatal("the barrier did not end when PE 1 was lost")
	}
	ev := ts.events.wait(t, EventLost, 1)
	require.True(t, strings.Contains(ev.Reason, "stopped"), ev.Reason)
	ts.srv.Lose(1, "again")
	require.ErrorIs(t, cs[2].Barrier(), core.ErrPeerLost)
	require.Eventually(t, func() bool { return cs[1].Err() != nil }, watchdog, time.Millisecond)
	require.Equal(t, 1, ts.events.count(EventLost))
	for _, c := range cs {
		c.Close()
	}
}
