package ntbring

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// forgeEntry publishes descriptor words w, and payload, as the next
// entry of host 0's ring into its right neighbour.
func forgeEntry(t *testing.T, d *domain, w [descWords]uint32, payload []byte) {
	t.Helper()
	l := d.proto.(*ringProto).link(ntb.Right)
	i, ok := l.tx.reserve(true)
	require.True(t, ok)
	if len(payload) > 0 {
		copy(l.slot(l.tx.data, i), payload)
	}
	if w[0] == 0 {
		w[0] = i // "fill in the index": a well-formed entry
		w[7] = descCheck(&w)
	}
	storeDesc(descAt(l.tx.descs, int(i%ringEntries)), &w)
	l.tx.publish(i)
	require.NoError(t, l.port.PeerDBSet(1<<dbRing))
}

// Garbage in a ring entry is dropped and logged, whatever it says, and
// the ring goes on working; well-formed entries aimed outside a region
// write nothing.
func TestGarbageInRingIsDropped(t *testing.T) {
	doms := openRingT(t, 3, nil)
	rs := regions(t, doms, 4096)
	drops := func(h int) func() bool {
		want := doms[h].drops.Load() + 1
		return func() bool { return doms[h].drops.Load() == want }
	}
	epoch := doms[0].proto.(*ringProto).link(ntb.Right).epoch
	all := [descWords]uint32{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}

	d1 := drops(1)
	forgeEntry(t, doms[0], all, nil)
	require.Eventually(t, d1, 5*time.Second, time.Millisecond)

	// A put past the end of host 1's region: nacked, and the nack for a
	// tag nobody waits for is dropped back at host 0.
	d0 := drops(0)
	put := meta{kind: kindPut, src: 0, dst: 1, off: 4090, size: 100, tag: 12345}
	w := put.encodeDesc(0, epoch)
	w[0] = 0
	forgeEntry(t, doms[0], w, bytes.Repeat([]byte{9}, 100))
	require.Eventually(t, d0, 5*time.Second, time.Millisecond)

	// A landed notice for bytes outside the region: dropped.
	d1 = drops(1)
	landed := meta{kind: kindLanded, src: 0, dst: 1, off: 4000, size: 200}
	w = landed.encodeDesc(0, epoch)
	w[0] = 0
	forgeEntry(t, doms[0], w, nil)
	require.Eventually(t, d1, 5*time.Second, time.Millisecond)
	require.Equal(t, make([]byte, 4096), rs[1].Local())

	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	require.NoError(t, ep.Put(1, rs[0], 8, []byte{7}))
	require.NoError(t, ep.Put(2, rs[0], 9, []byte{8}))
	require.NoError(t, ep.Quiet())
	require.Equal(t, byte(7), rs[1].Local()[8])
	require.Equal(t, byte(8), rs[2].Local()[9])
}

// A put to a neighbour lands straight in its region through the window
// pointed at it: nothing passes through the ring's data slots. A region
// beyond the windows still works, through the ring; so do relayed puts.
func TestDirectLanding(t *testing.T) {
	doms := openRingT(t, 3, nil)
	rs := regions(t, doms, 1<<20)
	extra := regions(t, doms, 1<<20) // region 1: the device has 2 windows, the ring's and region 0's
	p0 := doms[0].proto.(*ringProto)
	require.NotNil(t, p0.link(ntb.Right).directWindow(0))
	require.Nil(t, p0.link(ntb.Right).directWindow(1))

	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	big := bytes.Repeat([]byte{0xAB}, 256<<10)
	require.NoError(t, ep.Put(1, rs[0], 4096, big))
	require.NoError(t, ep.Put(1, rs[0], 16, big[:100]))
	require.Equal(t, uint64(0), ep.Counter().Issued(), "a direct put waits for no ack")
	require.Equal(t, big, rs[1].Local()[4096:4096+len(big)])
	require.Equal(t, big[:100], rs[1].Local()[16:116])
	in := doms[1].proto.(*ringProto).link(ntb.Left).rx.data
	require.Equal(t, -1, bytes.IndexByte(in, 0xAB), "no payload went through host 1's ring")

	require.NoError(t, ep.Put(1, extra[0], 8, big))
	require.NoError(t, ep.Put(2, rs[0], 8, big))
	require.NoError(t, ep.Quiet())
	require.Equal(t, big, extra[1].Local()[8:8+len(big)])
	require.Equal(t, big, rs[2].Local()[8:8+len(big)])
}

// A sleeping receiver that took work lately finds a new entry without a
// doorbell, by looking again every lookStep; one that took none waits for
// the doorbell. (A busy process serves the doorbell's path late: see
// rxRing.wait.)
func TestSleepingReceiverLooks(t *testing.T) {
	for _, worked := range []bool{true, false} {
		var prod, sleep uint32
		var cut atomic.Bool
		r := &rxRing{prod: &prod, sleep: &sleep, kick: make(chan struct{}, 1)}
		if worked {
			r.worked = time.Now().Add(time.Hour) // works for the whole test
		}
		stop := make(chan struct{})
		woke := make(chan bool, 1)
		go func() { woke <- r.wait(stop, 0, &cut) }()
		require.Eventually(t, func() bool { return atomic.LoadUint32(&sleep) != 0 }, 10*time.Second, 10*time.Microsecond)
		atomic.StoreUint32(&prod, 1) // published, no doorbell
		if worked {
			select {
			case ok := <-woke:
				require.True(t, ok)
			case <-time.After(10 * time.Second):
				t.Fatal("a receiver that worked lately did not look again within 10s")
			}
			continue
		}
		select {
		case <-woke:
			t.Fatal("an idle receiver woke without its doorbell")
		case <-time.After(50 * time.Millisecond):
		}
		r.kick <- struct{}{}
		require.True(t, <-woke)
	}
}
