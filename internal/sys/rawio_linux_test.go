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

// EpollReady says whether a watched socket has something to read, without
// waiting, and says yes for an instance that is no more.
func TestEpollReady(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
	require.NoError(t, err)
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	ep, err := EpollCreate()
	require.NoError(t, err)
	require.NoError(t, EpollWatch(ep, fds[0], false))
	require.False(t, EpollReady(ep), "nothing written yet")
	_, err = WriteNoWait(uintptr(fds[1]), []byte{7})
	require.NoError(t, err)
	require.True(t, EpollReady(ep), "a byte waits")
	require.True(t, EpollReady(ep), "level-triggered: it still waits")
	var b [1]byte
	_, err = ReadNoWait(uintptr(fds[0]), b[:])
	require.NoError(t, err)
	require.False(t, EpollReady(ep), "read")
	require.NoError(t, syscall.Close(ep))
	require.True(t, EpollReady(ep), "a closed instance")
}
