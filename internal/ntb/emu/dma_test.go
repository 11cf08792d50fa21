package emu

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

func TestDMAOrderAndCompletion(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	buf, err := b.MWSetTrans(0, 1<<20)
	require.NoError(t, err)
	out, err := a.PeerMW(0)
	require.NoError(t, err)
	require.Equal(t, 4, a.DMAChannels())
	ch, err := a.DMA(3)
	require.NoError(t, err)

	// Descriptors of one channel complete in submission order.
	const n = 64
	var mu sync.Mutex
	var order []int
	src := make([]byte, 4096)
	for i := range n {
		src := append([]byte(nil), src...)
		src[0] = byte(i)
		require.NoError(t, ch.Submit(out[i*4096:], src, func(err error) {
			require.NoError(t, err)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}))
	}
	require.NoError(t, ch.Wait())
	require.Len(t, order, n)
	for i := range n {
		require.Equal(t, i, order[i])
		require.Equal(t, byte(i), buf[i*4096])
	}
	s := a.Stats()
	require.Equal(t, uint64(n), s.DMADescriptors)
	require.Equal(t, uint64(n*4096), s.DMABytes)

	// From the inbound buffer to local memory (a get from a window).
	local := make([]byte, 4096)
	in, err := b.DMA(0)
	require.NoError(t, err)
	require.NoError(t, in.Submit(local, buf[5*4096:6*4096], nil))
	require.NoError(t, in.Wait())
	require.Equal(t, byte(5), local[0])
}

func TestDMAErrors(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	_, err := b.MWSetTrans(0, 4096)
	require.NoError(t, err)
	out, err := a.PeerMW(0)
	require.NoError(t, err)
	_, err = a.DMA(4)
	require.ErrorIs(t, err, ntb.ErrRange)
	ch, err := a.DMA(0)
	require.NoError(t, err)
	require.ErrorIs(t, ch.Submit(make([]byte, 10), make([]byte, 10), nil), ntb.ErrRange, "no window")
	require.ErrorIs(t, ch.Submit(out[:10], make([]byte, 11), nil), ntb.ErrRange, "too long")

	// A copy across a down link fails, and Wait reports it once.
	require.NoError(t, a.SetLinkDown(true))
	done := make(chan error, 1)
	require.NoError(t, ch.Submit(out, make([]byte, 4096), func(err error) { done <- err }))
	require.ErrorIs(t, <-done, ntb.ErrLinkDown)
	require.ErrorIs(t, ch.Wait(), ntb.ErrLinkDown)
	require.NoError(t, ch.Wait())
}

// TestDMACloseFailsQueued: closing a port completes every descriptor,
// each either copied or failed with ErrClosed, and leaves Wait returning.
func TestDMACloseFailsQueued(t *testing.T) {
	r, err := NewRing(t.TempDir(), 2, fastOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.EnableAll(10*time.Second))
	a, b := pair(r)
	_, err = b.MWSetTrans(0, 1<<20)
	require.NoError(t, err)
	out, err := a.PeerMW(0)
	require.NoError(t, err)
	ch, err := a.DMA(2)
	require.NoError(t, err)
	const n = 200
	var calls atomic.Int32
	var closed atomic.Int32
	src := make([]byte, 1<<20)
	for range n {
		require.NoError(t, ch.Submit(out, src, func(err error) {
			calls.Add(1)
			if errors.Is(err, ntb.ErrClosed) {
				closed.Add(1)
			} else if err != nil {
				t.Errorf("unexpected %v", err)
			}
		}))
	}
	require.NoError(t, a.Close())
	require.Equal(t, int32(n), calls.Load(), "every callback ran")
	t.Logf("%d of %d failed with ErrClosed", closed.Load(), n)
	require.ErrorIs(t, ch.Submit(out, src, nil), ntb.ErrClosed)
	_ = ch.Wait()
}

// TestDMAChannelsInParallel: the four channels run at once, each in
// order, under the race detector.
func TestDMAChannelsInParallel(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	buf, err := b.MWSetTrans(0, 4<<16)
	require.NoError(t, err)
	out, err := a.PeerMW(0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for c := range a.DMAChannels() {
		wg.Go(func() {
			ch, err := a.DMA(c)
			require.NoError(t, err)
			part := out[c<<16 : (c+1)<<16]
			for i := range 50 {
				require.NoError(t, ch.Submit(part, bytes.Repeat([]byte{byte(c*50 + i)}, 1<<16), nil))
			}
			require.NoError(t, ch.Wait())
		})
	}
	wg.Wait()
	for c := range 4 {
		require.Equal(t, bytes.Repeat([]byte{byte(c*50 + 49)}, 1<<16), buf[c<<16:(c+1)<<16], "channel %d's last copy wins", c)
	}
}
