//go:build linux

package tcp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// InputPending says whether some connection's socket has something for
// the reader goroutines, and says yes where it cannot watch every one or
// once the domain has closed its set.
func TestInputPending(t *testing.T) {
	c := &conn{}
	a, b := tcpPair(t)
	t.Cleanup(func() { _, _ = a.Close(), b.Close() })
	c.rd.sock.raw = rawConn(b)
	require.NotNil(t, c.rd.sock.raw)
	d := &domain{conns: []*conn{nil, c}}

	require.False(t, d.InputPending(), "nothing sent")
	_, err := a.Write([]byte{1})
	require.NoError(t, err)
	require.Eventually(t, d.InputPending, 5*time.Second, time.Millisecond, "a byte sent")
	var buf [1]byte
	_, err = b.Read(buf[:])
	require.NoError(t, err)
	require.False(t, d.InputPending(), "the byte read")
	require.NoError(t, a.Close())
	require.Eventually(t, d.InputPending, 5*time.Second, time.Millisecond, "the peer's end")

	d.inputs.close()
	require.True(t, d.InputPending(), "closed")

	unwatched := &domain{conns: []*conn{nil, {}}}
	require.True(t, unwatched.InputPending(), "a socket it cannot watch")
	unwatched.inputs.close()
}
