//go:build linux

package sys

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The raw calls move bytes as read(2) and write(2) do, and report an
// empty non-blocking socket as EAGAIN.
func TestNoWaitCalls(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
	require.NoError(t, err)
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	a, b := uintptr(fds[0]), uintptr(fds[1])

	require.Equal(t, syscall.EAGAIN, PeekNoWait(b), "nothing written yet")
	buf := make([]byte, 16)
	_, err = ReadNoWait(b, buf)
	require.Equal(t, syscall.EAGAIN, err)

	n, err := WriteNoWait(a, []byte("goshmem"))
	require.NoError(t, err)
	require.Equal(t, 7, n)
	require.NoError(t, PeekNoWait(b), "data waits")
	n, err = ReadNoWait(b, buf)
	require.NoError(t, err)
	require.Equal(t, "goshmem", string(buf[:n]))

	require.NoError(t, syscall.Shutdown(fds[0], syscall.SHUT_WR))
	require.NoError(t, PeekNoWait(b), "the end is something to read")
	n, err = ReadNoWait(b, buf)
	require.NoError(t, err)
	require.Zero(t, n, "end of stream")
}
