package emu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

// fastOptions is the model off, with short liveness timeouts.
func fastOptions() Options {
	o := DefaultOptions()
	o.Model = Model{}
	o.MWMax = 16 << 20
	o.Poll = 5 * time.Millisecond
	o.AttachTimeout = 10 * time.Second
	return o
}

// newRing makes a ring of n hosts in a test directory, links up.
func newRing(t testing.TB, n int, o Options) *Ring {
	t.Helper()
	r, err := NewRing(t.TempDir(), n, o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.NoError(t, r.EnableAll(10*time.Second))
	return r
}

// pair returns the two ports of link 0: host 0's Right and host 1's Left.
func pair(r *Ring) (a, b *Port) { return r.Hosts[0].Right, r.Hosts[1].Left }

// nextEvent waits for an event of kind k, skipping others.
func nextEvent(t testing.TB, p *Port, k ntb.EventKind) ntb.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-p.Events():
			require.True(t, ok, "events closed")
			if e.Kind == k {
				return e
			}
		case <-timeout:
			t.Fatalf("no %v event within 10s", k)
		}
	}
}

// noEvent checks that no event of kind k arrives within d.
func noEvent(t testing.TB, p *Port, k ntb.EventKind, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e := <-p.Events():
			require.NotEqual(t, k, e.Kind, "unexpected event %+v", e)
		case <-timeout:
			return
		}
	}
}
