//go:build unix

package tcp

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A read that moves more than rawBulk marks a bulk transfer, whose next
// read goes through the runtime's hooks; one that moves less, or finds
// the socket empty, ends it. The bytes arrive alike either way.
func TestRawReadMarksBulk(t *testing.T) {
	nc, peer := tcpPair(t)
	defer nc.Close()
	defer peer.Close()

	var s sockReader
	s.nc, s.raw = nc, rawConn(nc)
	s.rawRead = s.readRaw
	buf := make([]byte, 4*rawBulk)
	// readAll reads n bytes, looking until they have all come.
	readAll := func(n int) (got []byte, bulk []bool) {
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < n {
			require.True(t, time.Now().Before(deadline), "only %d of %d bytes came", len(got), n)
			k, err, ok := s.try(buf[:min(len(buf), n-len(got))])
			require.NoError(t, err)
			if ok {
				require.Equal(t, k > rawBulk, s.bulk, "a read of %d bytes", k)
				got = append(got, buf[:k]...)
				bulk = append(bulk, s.bulk)
			}
		}
		return got, bulk
	}

	big := make([]byte, 3*rawBulk)
	for i := range big {
		big[i] = byte(i * 13)
	}
	_, err := peer.Write(big)
	require.NoError(t, err)
	got, _ := readAll(len(big))
	require.Equal(t, big, got)

	_, err = peer.Write([]byte("small"))
	require.NoError(t, err)
	got, bulk := readAll(5)
	require.Equal(t, []byte("small"), got)
	require.False(t, bulk[len(bulk)-1], "a small read ends the bulk transfer")

	s.bulk = true
	_, err, ok := s.try(buf)
	require.False(t, ok, "the socket is empty: %v", err)
	require.False(t, s.bulk, "an empty look ends it too")
}

// An issuer's small write goes out with raw system calls (writeAll), and
// one that finds the socket full waits for room in the runtime's poller
// instead of failing or dropping what did not fit: every byte arrives, in
// order, once the peer reads. A write to a socket the peer reset fails.
func TestIssuerSmallWritesWaitForRoom(t *testing.T) {
	nc, peer := tcpPair(t)
	defer nc.Close()
	defer peer.Close()
	require.NoError(t, nc.(*net.TCPConn).SetWriteBuffer(64<<10))
	require.NoError(t, peer.(*net.TCPConn).SetReadBuffer(64<<10))

	w := &writer{nc: nc, raw: rawConn(nc)}
	require.NotNil(t, w.raw)
	w.rawWrite, w.rawAll = w.writeRaw, w.writeAll
	// Far more than both socket buffers hold, in writes of rawBulk bytes
	// at most, which take the raw path.
	const writes, size = 64, rawBulk
	want := make([]byte, 0, writes*size)
	done := make(chan error, 1)
	go func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := range writes {
			b := make([]byte, size)
			for j := range b {
				b[j] = byte(i*7 + j*3)
			}
			if err := w.write(b, nil, false); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range writes {
		for j := range size {
			want = append(want, byte(i*7+j*3))
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the writes returned (%v) before the peer read anything", err)
	case <-time.After(50 * time.Millisecond):
	}
	got := make([]byte, len(want))
	require.NoError(t, peer.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err := io.ReadFull(peer, got)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, want, got)

	// The peer resets the connection: a write fails, it does not hang.
	require.NoError(t, peer.(*net.TCPConn).SetLinger(0))
	require.NoError(t, peer.Close())
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		err = w.write([]byte("after the reset"), nil, false)
		w.mu.Unlock()
		if err != nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "writes to a reset socket kept succeeding")
		time.Sleep(time.Millisecond)
	}
}
