package bootstrap

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/sys"
)

// A store connection gets the user timeout that bounds how long the kernel
// keeps unacknowledged data for a vanished host.
func TestTuneConnSetsUserTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	tuneConn(c)
	rc, err := c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	got, err := sys.TCPUserTimeout(rc)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no TCP user timeout on this system")
	}
	require.NoError(t, err)
	require.Equal(t, userTimeout, got)
}
