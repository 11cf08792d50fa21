//go:build linux

package tcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ownPair returns the two ends of a TCP connection, each taken out of the
// runtime's poller.
func ownPair(t *testing.T) (*sock, *sock) {
	t.Helper()
	ca, cb := tcpPair(t)
	var ends [2]*sock
	for i, c := range []net.Conn{ca, cb} {
		own, err := ownSocket(c)
		require.NoError(t, err)
		s, ok := own.(*sock)
		require.True(t, ok, "ownSocket returned %T", own)
		t.Cleanup(func() { _ = s.Close() })
		ends[i] = s
	}
	return ends[0], ends[1]
}

// watchers lists the epoll instances of this process that watch the
// socket fd, from /proc/self/fdinfo (each watched file's inode is there).
func watchers(t *testing.T, fd int) []int {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Fstat(fd, &st))
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var eps []int
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range strings.Split(string(info), "\n") {
			i := strings.Index(line, " ino:")
			if !strings.HasPrefix(line, "tfd:") || i < 0 {
				continue
			}
			var ino uint64
			if _, err := fmt.Sscanf(line[i+len(" ino:"):], "%x", &ino); err == nil && ino == st.Ino {
				var ep int
				_, _ = fmt.Sscanf(e.Name(), "%d", &ep)
				eps = append(eps, ep)
			}
		}
	}
	return eps
}

// fdOf is the descriptor of a net package's socket.
func fdOf(t *testing.T, c net.Conn) int {
	rc, err := c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	fd := -1
	require.NoError(t, rc.Control(func(f uintptr) { fd = int(f) }))
	return fd
}

// A socket the net package keeps is in the runtime's epoll set for good;
// a sock's is in no set while nobody waits on it, in its own read set
// from when a reader waits until a poll pays off, and in its write set only
// while a write waits for room.
func TestSockOutsideRuntimePoller(t *testing.T) {
	ca, cb := tcpPair(t)
	defer ca.Close()
	defer cb.Close()
	require.NotEmpty(t, watchers(t, fdOf(t, ca)), "the net package's socket is in the runtime's poller")

	a, b := ownPair(t)
	require.Empty(t, watchers(t, a.fd), "an idle sock is in no epoll set")
	require.Empty(t, watchers(t, b.fd))

	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 16)
		n, err := a.Read(buf)
		if err != nil {
			got <- nil
			return
		}
		got <- buf[:n]
	}()
	inSet := int(a.in.f.Fd())
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(watchers(t, a.fd), inSet) {
		require.True(t, time.Now().Before(deadline), "the waiting reader's set never held the socket")
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, []int{inSet}, watchers(t, a.fd), "only the sock's own read set watches it")

	_, err := b.Write([]byte("hello"))
	require.NoError(t, err)
	select {
	case p := <-got:
		require.Equal(t, []byte("hello"), p)
	case <-time.After(10 * time.Second):
		t.Fatal("the reader was never woken")
	}
	require.Equal(t, []int{inSet}, watchers(t, a.fd), "in the set until a poll pays off: a reader that sleeps again needs no epoll_ctl")
	a.settleRead()
	require.Empty(t, watchers(t, a.fd), "out of the set once a poll pays off")

	// A write that waited for room leaves the write set as it ends.
	go func() { _, _ = io.Copy(io.Discard, b) }()
	_, err = a.Write(make([]byte, 32<<20))
	require.NoError(t, err)
	require.Empty(t, watchers(t, a.fd), "out of the write set after the write")
}

// Data and the peer's half-close pass as on any socket; the raw
// connection's Read waits for the socket between calls. (Vectored writes
// go through the writer's writev path, which the connection tests run.)
func TestSockStream(t *testing.T) {
	a, b := ownPair(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: the writer waits for room
	done := make(chan error, 1)
	go func() {
		_, err := a.Write(big)
		if err == nil {
			err = a.CloseWrite()
		}
		done <- err
	}()
	all, err := io.ReadAll(b)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, big, all, "every byte, in order, then the end")

	// The raw connection's Read calls its function again only after the
	// socket became readable: here the byte is written once the first
	// call found the socket empty.
	c, d := ownPair(t)
	raw, err := d.SyscallConn()
	require.NoError(t, err)
	calls, emptyFirst := 0, false
	write := make(chan struct{})
	go func() {
		<-write
		_, _ = c.Write([]byte{7})
	}()
	var got byte
	require.NoError(t, raw.Read(func(fd uintptr) bool {
		calls++
		var p [1]byte
		n, err := syscall.Read(int(fd), p[:])
		if calls == 1 {
			emptyFirst = err == syscall.EAGAIN
			close(write)
		}
		got = p[0]
		return n == 1 || (err != nil && err != syscall.EAGAIN)
	}))
	require.True(t, emptyFirst, "the first call found the socket empty")
	require.GreaterOrEqual(t, calls, 2, "called again once the byte came")
	require.Equal(t, byte(7), got)
}

// Closing a sock wakes whoever waits on it, reading or writing, with an
// error, within a bounded time; later operations fail at once.
func TestSockCloseWakesWaiters(t *testing.T) {
	a, _ := ownPair(t)
	reading := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 8))
		reading <- err
	}()
	writing := make(chan error, 1)
	go func() {
		// The peer never reads: the write fills both buffers and waits.
		_, err := a.Write(make([]byte, 64<<20))
		writing <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(watchers(t, a.fd)) < 2 {
		require.True(t, time.Now().Before(deadline), "the reader and the writer never both waited")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, a.Close())
	for name, ch := range map[string]chan error{"reader": reading, "writer": writing} {
		select {
		case err := <-ch:
			require.Error(t, err, name)
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s was not woken by Close", name)
		}
	}
	_, err := a.Read(make([]byte, 1))
	require.True(t, errors.Is(err, net.ErrClosed), "read after close: %v", err)
	_, err = a.Write([]byte{1})
	require.True(t, errors.Is(err, net.ErrClosed), "write after close: %v", err)
	raw, _ := a.SyscallConn()
	require.Error(t, raw.Control(func(uintptr) {}), "no descriptor after close")
	require.True(t, errors.Is(a.Close(), net.ErrClosed), "a second close")
}
