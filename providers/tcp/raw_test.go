//go:build unix

package tcp

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A read that moves more than rawBulk marks a bulk transfer, whose next
// read goes through the runtime's hooks; one that moves less, or finds
// the socket empty, ends it. The bytes arrive alike either way.
func TestRawReadMarksBulk(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	peer, err := l.Accept()
	require.NoError(t, err)
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
	_, err = peer.Write(big)
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
