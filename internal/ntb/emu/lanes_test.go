package emu

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// openLanes opens hosts x lanes devices' lanes with Open, as the PEs of
// a job do, each in a goroutine, links enabled and up; by host, then lane.
func openLanes(t *testing.T, hosts, lanes int, o Options) [][]*Host {
	t.Helper()
	dir := t.TempDir()
	hs := make([][]*Host, hosts)
	errs := make([]error, hosts*lanes)
	var wg sync.WaitGroup
	for h := range hosts {
		hs[h] = make([]*Host, lanes)
		for l := range lanes {
			wg.Go(func() {
				lo := o
				lo.Lane, lo.Lanes = l, lanes
				hs[h][l], errs[h*lanes+l] = Open(dir, h, hosts, lo)
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, lh := range hs {
			for _, h := range lh {
				require.NoError(t, h.Close())
			}
		}
	})
	for _, lh := range hs {
		for _, h := range lh {
			require.NoError(t, h.Left.LinkEnable())
			require.NoError(t, h.Right.LinkEnable())
		}
	}
	for _, lh := range hs {
		for _, h := range lh {
			require.NoError(t, h.Left.WaitLink(10*time.Second))
			require.NoError(t, h.Right.WaitLink(10*time.Second))
		}
	}
	return hs
}

// Each lane is a device of its own (files of its own, doorbells that
// reach only the same lane on the neighbour), but the link is the
// link's: forced down through one lane's port, it is down for every lane
// on both hosts, each port reports it, and lifted it is up for all again.
func TestLanesShareTheLink(t *testing.T) {
	hs := openLanes(t, 2, 3, fastOptions())
	for l := range 3 {
		require.FileExists(t, LinkPath(filepath.Dir(hs[0][l].linkFile), laneTag("", l), 0))
	}
	// A doorbell rung on lane 1 of host 0 reaches lane 1 of host 1 only.
	require.NoError(t, hs[0][1].Right.PeerDBSet(1<<3))
	e := nextEvent(t, hs[1][1].Left, ntb.DoorbellEvent)
	require.Equal(t, uint64(1<<3), e.DB)
	require.Zero(t, hs[1][0].Left.DBRead())
	require.Zero(t, hs[1][2].Left.DBRead())

	// Every port's count of downs moves with a cut through any lane, so
	// an event loop that never looked while the link was up still reports
	// the cut (lane 0's own file epoch does not move for another lane's).
	var downs [2][3]uint32
	for h, side := range []ntb.Side{ntb.Right, ntb.Left} {
		for l := range 3 {
			downs[h][l] = hs[h][l].Port(side).downs()
		}
	}
	require.NoError(t, hs[0][2].Right.SetLinkDown(true)) // lane 2 cuts link 0
	for h, side := range []ntb.Side{ntb.Right, ntb.Left} {
		for l := range 3 {
			p := hs[h][l].Port(side)
			require.NotEqual(t, downs[h][l], p.downs(), "host %d lane %d counts the cut", h, l)
			require.Eventually(t, func() bool { return !p.LinkIsUp() }, 10*time.Second, time.Millisecond,
				"host %d lane %d sees link 0 down", h, l)
			nextEvent(t, p, ntb.LinkEvent)
		}
	}
	require.NoError(t, hs[1][0].Left.SetLinkDown(false)) // lifted from another lane
	for h := range 2 {
		for l := range 3 {
			require.NoError(t, hs[h][l].Port([]ntb.Side{ntb.Right, ntb.Left}[h]).WaitLink(10*time.Second),
				"host %d lane %d sees link 0 up again", h, l)
		}
	}
}

// Lanes out of range are refused with what is allowed.
func TestLanesOptionsChecked(t *testing.T) {
	for _, c := range []struct{ lane, lanes int }{{0, MaxLanes + 1}, {2, 2}, {-1, 2}, {1, 0}} {
		o := fastOptions()
		o.Lane, o.Lanes = c.lane, c.lanes
		_, err := Open(t.TempDir(), 0, 2, o)
		require.ErrorIs(t, err, core.ErrInvalid, "lane %d of %d", c.lane, c.lanes)
		require.ErrorContains(t, err, "allowed", "lane %d of %d", c.lane, c.lanes)
	}
}
