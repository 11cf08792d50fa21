package ntbring

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// TestWindowProtocolMatchesC compares the C window path's copy of the
// words (capi/window.h, GSH_WIN_* macros) with this side's, so the two
// sides of PROTOCOL.md cannot drift apart silently.
func TestWindowProtocolMatchesC(t *testing.T) {
	f, err := os.Open("../../capi/window.h")
	if os.IsNotExist(err) {
		t.Skip("no capi/window.h in this tree")
	}
	require.NoError(t, err)
	defer f.Close()
	def := regexp.MustCompile(`^#define\s+GSH_WIN_(\w+)\s+(\d+)`)
	got := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := def.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseUint(m[2], 0, 64)
			require.NoError(t, err, m[0])
			got[m[1]] = v
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, map[string]uint64{"VERSION": WindowProtocolVersion, "UP": wordUp, "NOTICE": wordNotice}, got)
	require.Equal(t, 64, offLanded-offSleep, "PROTOCOL.md: the acknowledged word is at 192 of the ring window")
	require.Equal(t, 192, offLanded)
}

// putByWindow is what a second implementation of the protocol does for a
// put of v at off of pe's part of r: store through the window, a full
// barrier, the link's words, and the provider's part when they ask. It
// reports whether it was complete without the provider.
func putByWindow(t *testing.T, d *domain, pe int, r core.Region, off int, v uint64) (alone bool) {
	t.Helper()
	win := d.PeerWindow(pe, r)
	words, acked := d.PeerLink(pe)
	require.NotNil(t, win)
	require.NotNil(t, words)
	require.NotNil(t, acked)
	require.NotZero(t, atomic.LoadUint32(mem.Word32(words, wordUp)))
	mem.StoreValue(win, off, v, 8)
	var fence atomic.Uint32
	fence.Add(1)
	notice := atomic.LoadUint32(mem.Word32(words, wordNotice))
	ack := atomic.LoadUint32(mem.Word32(acked, 0))
	if atomic.LoadUint32(mem.Word32(words, wordUp)) != 0 && notice != 0 && int32(ack-notice) < 0 {
		return true
	}
	done, err := d.WindowLanded(pe, r, off, 8)
	require.NoError(t, err)
	require.True(t, done)
	return false
}

// The window map by the protocol, in process: neighbours have windows and
// link words, a PE two hops away and the PE itself have none; puts by the
// window land, the first asks for a notice and wakes the target's waiter,
// Go's own direct puts and the protocol's share the notice word; a cut
// link's up word goes to 0 and WindowLanded says to redo.
func TestWindowMap(t *testing.T) {
	doms := openRingT(t, 4, map[string]string{"GOSHMEM_NTB_FAULT": "link=0:down@2s"})
	rs := regions(t, doms, 1<<16)
	d0 := doms[0]
	name, version, max := d0.WindowProtocol()
	require.Equal(t, WindowProtocolName, name)
	require.Equal(t, WindowProtocolVersion, version)
	require.Equal(t, pioMax, max)
	require.Nil(t, d0.PeerWindow(0, rs[0]), "itself")
	require.Nil(t, d0.PeerWindow(2, rs[0]), "two hops away")
	w, a := d0.PeerLink(2)
	require.Nil(t, w)
	require.Nil(t, a)
	require.Len(t, d0.PeerWindow(1, rs[0]), 1<<16)
	require.Len(t, d0.PeerWindow(3, rs[0]), 1<<16)
	require.Nil(t, d0.PeerWindow(1, nil), "not a region of the domain")

	// A put by the window wakes host 1's waiter.
	seq, _ := doms[1].WaitArm(rs[1], 0, 8)
	woke := make(chan uint32, 1)
	go func() { woke <- doms[1].WaitChange(seq, 10*time.Second) }()
	putByWindow(t, d0, 1, rs[0], 0, 42)
	select {
	case s := <-woke:
		require.NotEqual(t, seq, s, "the waiter timed out: no notice woke it")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken")
	}
	require.Equal(t, uint64(42), mem.LoadValue(rs[1].Local(), 0, 8))

	// A stream: by the window and Go's own PutValue in turn, the notices
	// coalesced over both.
	ep, err := d0.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	alone := 0
	const n = 2000
	for i := range n {
		if i%2 == 0 {
			if putByWindow(t, d0, 1, rs[0], 8*(i%1024), uint64(i)) {
				alone++
			}
		} else {
			require.NoError(t, ep.PutValue(1, rs[0], 8*(i%1024), uint64(i), 8))
		}
	}
	require.NoError(t, ep.Quiet())
	for i := n - 1024; i < n; i++ {
		require.Equal(t, uint64(i), mem.LoadValue(rs[1].Local(), 8*(i%1024), 8), "value %d", i)
	}
	t.Logf("%d of %d puts by the window needed no notice", alone, n/2)

	// Link 0 (hosts 0 and 1) goes down: its up word falls, and the
	// provider says to redo a put whose stores crossed it.
	words, _ := d0.PeerLink(1)
	require.Eventually(t, func() bool { return atomic.LoadUint32(mem.Word32(words, wordUp)) == 0 }, 10*time.Second, time.Millisecond)
	done, err := d0.WindowLanded(1, rs[0], 0, 8)
	require.NoError(t, err)
	require.False(t, done, "a put across a cut link is to be redone")
	require.Nil(t, d0.PeerWindow(1, rs[0]), "no window over a cut link")
}
