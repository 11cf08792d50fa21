package ntbring

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

var testDescLim = descLimits{index: 41, epoch: 0x1235, self: 2, hosts: 5, slotSize: 64 << 10}

func TestDescRoundTrip(t *testing.T) {
	for _, m := range []meta{
		{kind: kindPut, src: 0, dst: 4, region: 7, off: 100, size: 64 << 10, tag: 5},
		{kind: kindLanded, src: 1, dst: 2, off: 8, size: 1 << 30},
		{kind: kindBarrier, src: 4, dst: 0, round: 2},
		{kind: kindBarrier, src: 4, dst: 0, round: maxRounds - 1},
		{kind: kindAmoReq, src: 3, dst: 1, size: amoRequestSize, tag: 9},
		{kind: kindCut, src: 0, dst: 4, side: ntb.Left, taken: 1 << 31},
		{kind: kindCut, src: 4, dst: 0, side: ntb.Right, taken: 7},
		{kind: kindRepair, src: 1, dst: 0, side: ntb.Left},
		{kind: kindRepair, src: 4, dst: 0, side: ntb.Right},
	} {
		got, err := decodeDesc(m.encodeDesc(testDescLim.index, testDescLim.epoch), testDescLim)
		require.NoError(t, err, m.kind)
		require.Equal(t, m, got)
	}
}

// TestDescNoticeWords pins where the ring's own messages travel in a
// descriptor: a link notice's side in word 1's low byte and a cut's
// entries taken in word 2, a barrier's round in word 2, the words a
// transfer uses for region and offset. The wire format is unchanged by
// giving them fields of their own.
func TestDescNoticeWords(t *testing.T) {
	for _, c := range []struct {
		m      meta
		w1, w2 uint32
	}{
		{meta{kind: kindCut, src: 1, dst: 2, side: ntb.Right, taken: 12}, uint32(kindCut)<<24 | 1<<16 | 2<<8 | 1, 12},
		{meta{kind: kindCut, src: 1, dst: 0, side: ntb.Left, taken: 99}, uint32(kindCut)<<24 | 1<<16, 99}, // to host 0, side Left: both bytes zero
		{meta{kind: kindRepair, src: 4, dst: 0, side: ntb.Right}, uint32(kindRepair)<<24 | 4<<16 | 0<<8 | 1, 0},
		{meta{kind: kindBarrier, src: 3, dst: 0, round: 2}, uint32(kindBarrier)<<24 | 3<<16 | 0<<8, 2},
		{meta{kind: kindLanded, src: 3, dst: 4, region: 6, off: 80, size: 8}, uint32(kindLanded)<<24 | 3<<16 | 4<<8 | 6, 80},
	} {
		w := c.m.encodeDesc(testDescLim.index, testDescLim.epoch)
		require.Equal(t, c.w1, w[1], "%s word 1", c.m.kind)
		require.Equal(t, c.w2, w[2], "%s word 2", c.m.kind)
		got, err := decodeDesc(w, testDescLim)
		require.NoError(t, err, c.m.kind)
		require.Equal(t, c.m, got)
	}
}

func TestDescRejects(t *testing.T) {
	good := meta{kind: kindPut, src: 0, dst: 4, off: 100, size: 512, tag: 5}
	for name, c := range map[string]struct {
		m            meta
		index, epoch uint32
		mangle       func(w *[descWords]uint32)
	}{
		"stale index":   {m: good, index: 40, epoch: testDescLim.epoch},
		"old epoch":     {m: good, index: 41, epoch: 0x1233},
		"torn word":     {m: good, index: 41, epoch: testDescLim.epoch, mangle: func(w *[descWords]uint32) { w[2]++ }},
		"reserved word": {m: good, index: 41, epoch: testDescLim.epoch, mangle: func(w *[descWords]uint32) { w[6] = 1; w[7] = descCheck(w) }},
		"unknown kind":  {m: meta{kind: kindEnd, src: 0, dst: 1}, index: 41, epoch: testDescLim.epoch},
		"host outside":  {m: meta{kind: kindPut, src: 0, dst: 5}, index: 41, epoch: testDescLim.epoch},
		"to itself":     {m: meta{kind: kindPut, src: 3, dst: 3}, index: 41, epoch: testDescLim.epoch},
		"over the slot": {m: meta{kind: kindPut, src: 0, dst: 1, size: 64<<10 + 1}, index: 41, epoch: testDescLim.epoch},
		"empty landing": {m: meta{kind: kindLanded, src: 0, dst: 1}, index: 41, epoch: testDescLim.epoch},
		"barrier round": {m: meta{kind: kindBarrier, src: 0, dst: 1, round: maxRounds}, index: 41, epoch: testDescLim.epoch},
		"barrier with a region": {m: meta{kind: kindBarrier, src: 0, dst: 1, round: 1}, index: 41, epoch: testDescLim.epoch,
			mangle: func(w *[descWords]uint32) { w[1] |= 3; w[7] = descCheck(w) }},
		"short amo request":    {m: meta{kind: kindAmoReq, src: 0, dst: 1, size: 8}, index: 41, epoch: testDescLim.epoch},
		"cut of a far host":    {m: meta{kind: kindCut, src: 0, dst: 2, side: ntb.Right}, index: 41, epoch: testDescLim.epoch},
		"cut of no side":       {m: meta{kind: kindCut, src: 0, dst: 1, side: 2}, index: 41, epoch: testDescLim.epoch},
		"cut with payload":     {m: meta{kind: kindCut, src: 0, dst: 1, side: ntb.Right, size: 4}, index: 41, epoch: testDescLim.epoch},
		"repair of a far host": {m: meta{kind: kindRepair, src: 0, dst: 3, side: ntb.Right}, index: 41, epoch: testDescLim.epoch},
		"repair of no side":    {m: meta{kind: kindRepair, src: 1, dst: 2, side: 3}, index: 41, epoch: testDescLim.epoch},
		"repair with payload":  {m: meta{kind: kindRepair, src: 2, dst: 1, side: ntb.Left, size: 1}, index: 41, epoch: testDescLim.epoch},
		"repair with entries taken": {m: meta{kind: kindRepair, src: 2, dst: 1, side: ntb.Left}, index: 41, epoch: testDescLim.epoch,
			mangle: func(w *[descWords]uint32) { w[2] = 5; w[7] = descCheck(w) }},
	} {
		w := c.m.encodeDesc(c.index, c.epoch)
		if c.mangle != nil {
			c.mangle(&w)
		}
		_, err := decodeDesc(w, testDescLim)
		require.ErrorIs(t, err, errBadMeta, name)
	}
}

// testTorusLim is a receiver's limits on a 4 x 3 torus: host 5 hears
// from its neighbours 4, 6, 1 and 9.
var testTorusLim = descLimits{index: 41, epoch: 0x1235, self: 5, hosts: 12, slotSize: 64 << 10, width: 4}

// On a torus, link notices name any of four sides, and a link-down
// notice tells a neighbour which host's side is cut; what does not fit
// the torus is refused.
func TestDescTorus(t *testing.T) {
	for _, m := range []meta{
		{kind: kindLinkDown, src: 4, dst: 5, side: ntb.Down, linkHost: 11},
		{kind: kindLinkDown, src: 9, dst: 5, side: ntb.Left, linkHost: 0},
		{kind: kindCut, src: 1, dst: 5, side: ntb.Down, taken: 3},
		{kind: kindCut, src: 9, dst: 5, side: ntb.Up, taken: 0},
		{kind: kindPut, src: 0, dst: 11, size: 9, off: 3},
	} {
		got, err := decodeDesc(m.encodeDesc(41, testTorusLim.epoch), testTorusLim)
		require.NoError(t, err, "%+v", m)
		require.Equal(t, m, got)
	}
	for name, m := range map[string]meta{
		"link-down from afar":     {kind: kindLinkDown, src: 3, dst: 5, side: ntb.Down, linkHost: 1},
		"link-down of no host":    {kind: kindLinkDown, src: 4, dst: 5, side: ntb.Down, linkHost: 12},
		"link-down of no side":    {kind: kindLinkDown, src: 4, dst: 5, side: 4, linkHost: 1},
		"link-down with payload":  {kind: kindLinkDown, src: 4, dst: 5, side: ntb.Up, linkHost: 1, size: 2},
		"cut of a host not below": {kind: kindCut, src: 1, dst: 5, side: ntb.Up},
	} {
		_, err := decodeDesc(m.encodeDesc(41, testTorusLim.epoch), testTorusLim)
		require.ErrorIs(t, err, errBadMeta, name)
	}
	// A ring has no link-down notices, nor sides up and down.
	for _, m := range []meta{{kind: kindLinkDown, src: 1, dst: 2, side: ntb.Left, linkHost: 1}, {kind: kindCut, src: 1, dst: 2, side: ntb.Down}} {
		_, err := decodeDesc(m.encodeDesc(41, testDescLim.epoch), testDescLim)
		require.ErrorIs(t, err, errBadMeta, "%+v", m)
	}
}

// FuzzDecodeDesc feeds descriptors as a neighbour might leave them in a
// ring slot: garbage is an error, never a panic, and what decodes names
// hosts of the ring and fits a data slot.
func FuzzDecodeDesc(f *testing.F) {
	for _, m := range []meta{
		{kind: kindPut, src: 0, dst: 4, region: 7, off: 100, size: 64 << 10, tag: 5},
		{kind: kindLanded, src: 1, dst: 2, off: 8, size: 1 << 20},
		{kind: kindGetResp, src: 3, dst: 2, size: 100, tag: 77},
		{kind: kindCut, src: 1, dst: 2, side: ntb.Right, taken: 12},
		{kind: kindRepair, src: 3, dst: 2, side: ntb.Left},
		{kind: kindBarrier, src: 0, dst: 2, round: 3},
		{kind: kindAmoReq, src: 1, dst: 2, dpe: 2, region: 1, off: 64, size: 24, tag: 9},
		{kind: kindLinkDown, src: 4, dst: 5, side: ntb.Down, linkHost: 11},
		{kind: kindCut, src: 1, dst: 5, side: ntb.Down, taken: 3},
	} {
		w := m.encodeDesc(testDescLim.index, testDescLim.epoch)
		f.Add(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7])
	}
	f.Fuzz(func(t *testing.T, w0, w1, w2, w3, w4, w5, w6, w7 uint32) {
		w := [descWords]uint32{w0, w1, w2, w3, w4, w5, w6, w7}
		// With lanes, word 6 names the destination PE on its host: below
		// the lanes, and the descriptor round-trips.
		lanes := testDescLim
		lanes.lanes = 3
		if m, err := decodeDesc(w, lanes); err != nil {
			require.ErrorIs(t, err, errBadMeta)
		} else {
			require.Less(t, int(m.dpe), lanes.lanes)
			require.Equal(t, w, m.encodeDesc(lanes.index, lanes.epoch))
		}
		// On a torus, a link notice's side faces its destination, and a
		// link-down notice comes from a neighbour and names a link.
		if m, err := decodeDesc(w, testTorusLim); err != nil {
			require.ErrorIs(t, err, errBadMeta)
		} else {
			topo := testTorusLim.topo()
			require.Equal(t, w, m.encodeDesc(testTorusLim.index, testTorusLim.epoch))
			switch {
			case m.kind.isLinkNotice():
				require.Equal(t, int(m.dst), topo.neighbour(int(m.src), m.side))
			case m.kind == kindLinkDown:
				require.True(t, topo.validSide(m.side))
				require.Less(t, int(m.linkHost), topo.hosts)
				require.True(t, adjacent(topo, int(m.src), int(m.dst)))
				require.Zero(t, m.size)
			}
		}
		m, err := decodeDesc(w, testDescLim)
		if err != nil {
			require.ErrorIs(t, err, errBadMeta)
			return
		}
		require.True(t, m.kind > 0 && m.kind < kindEnd)
		require.Less(t, int(m.src), testDescLim.hosts)
		require.Less(t, int(m.dst), testDescLim.hosts)
		require.NotEqual(t, m.src, m.dst)
		require.LessOrEqual(t, m.payloadLen(), testDescLim.slotSize)
		require.Equal(t, w, m.encodeDesc(testDescLim.index, testDescLim.epoch))
		// Each message's meaning is in fields of its own: a link notice
		// or a barrier signal names no memory, a transfer no link.
		switch {
		case m.kind.isLinkNotice():
			require.Zero(t, m.region)
			require.Zero(t, m.off)
			require.Zero(t, m.round)
			require.Contains(t, []ntb.Side{ntb.Left, ntb.Right}, m.side)
			require.Equal(t, int(m.dst), neighbour(int(m.src), testDescLim.hosts, m.side), "the notice's link joins its hosts")
			if m.kind == kindRepair {
				require.Zero(t, m.taken)
			}
		case m.kind == kindBarrier:
			require.Zero(t, m.region)
			require.Zero(t, m.off)
			require.Less(t, int(m.round), maxRounds)
			require.Zero(t, m.side)
			require.Zero(t, m.taken)
		default:
			require.Zero(t, m.round)
			require.Zero(t, m.side)
			require.Zero(t, m.taken)
		}
	})
}
