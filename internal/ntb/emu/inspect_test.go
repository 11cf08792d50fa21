package emu

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

func TestInspect(t *testing.T) {
	r := newRing(t, 3, fastOptions())
	a, b := r.Hosts[2].Right, r.Hosts[0].Left // link 2
	require.NoError(t, a.SpadWrite(5, 55))
	require.NoError(t, b.DBSetMask(0x8000))
	require.NoError(t, a.PeerDBSet(0x8001))
	_, err := b.MWSetTrans(1, 8192)
	require.NoError(t, err)

	s, err := Inspect(a.dir, "", 0, ntb.Left)
	require.NoError(t, err)
	require.Equal(t, 2, s.Link)
	require.Equal(t, 3, s.Hosts)
	require.True(t, s.Up)
	require.Equal(t, uint32(55), s.Peer.Spads[5])
	require.Equal(t, uint16(0x8001), s.Own.DBPending)
	require.Equal(t, uint16(0x8000), s.Own.DBMask)
	require.Equal(t, []WindowState{{}, {Gen: 1, Size: 8192}}, s.Own.Windows)
	require.Equal(t, uint64(1), s.Peer.Stats.DoorbellsSent)
	require.True(t, s.Own.Alive)

	tags, err := Tags(a.dir)
	require.NoError(t, err)
	require.Equal(t, []string{""}, tags)
	o := fastOptions()
	o.Tag = "dom-7"
	r2, err := NewRing(a.dir, 2, o)
	require.NoError(t, err)
	defer func() { require.NoError(t, r2.Close()) }()
	_, err = r2.Hosts[1].Left.MWSetTrans(0, 4096) // a window file is not a ring
	require.NoError(t, err)
	tags, err = Tags(a.dir)
	require.NoError(t, err)
	require.Equal(t, []string{"", "dom-7"}, tags)
	s, err = Inspect(a.dir, "dom-7", 1, ntb.Left)
	require.NoError(t, err)
	require.Equal(t, 2, s.Hosts)
	_, err = Inspect(a.dir, "", 7, ntb.Left)
	require.Error(t, err)
	_, err = Inspect(a.dir, "other", 0, ntb.Left)
	require.Error(t, err)
}
