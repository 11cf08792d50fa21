//go:build linux

package sys

import (
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestShareInPlace(t *testing.T) {
	page := os.Getpagesize()
	b, err := MapPrivate(2 * page)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(b)) })
	copy(b, "static data")
	b[page+7] = 9
	addr := &b[0]

	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, ShareInPlace(path, b))
	require.Same(t, addr, &b[0], "the memory keeps its address")
	require.Equal(t, "static data", string(b[:11]), "and its contents")
	require.Equal(t, byte(9), b[page+7])

	peer, err := OpenShared(path, 2*page)
	require.NoError(t, err)
	require.Equal(t, "static data", string(peer[:11]), "a peer maps the contents")
	peer[100] = 42
	require.Equal(t, byte(42), b[100], "a peer's store lands in the memory")
	b[200] = 43
	require.Equal(t, byte(43), peer[200])
	require.Error(t, ShareInPlace(path, b), "the file exists")

	// A second mapping over the same memory, as a PE maps a file its
	// plugin moved it onto.
	other, err := MapPrivate(2 * page)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(other)) })
	require.NoError(t, MapSharedAt(path, other))
	require.Equal(t, byte(42), other[100])
	require.Error(t, MapSharedAt(path, other[:page]), "the file is longer")

	require.NoError(t, Unshare(b))
	require.Same(t, addr, &b[0])
	require.Equal(t, byte(42), b[100], "unshared memory keeps its contents")
	b[100] = 1
	require.Equal(t, byte(42), peer[100], "and is private again")
	require.NoError(t, Unmap(peer))
	require.NoError(t, os.Remove(path))
}

func TestShareInPlaceRefuses(t *testing.T) {
	page := os.Getpagesize()
	b, err := MapPrivate(2 * page)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(b)) })
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		mem  []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"unaligned start", b[8 : page+8], "page boundary"},
		{"partial page", b[:page+1], "multiple of"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			err := ShareInPlace(path, tt.mem)
			require.ErrorContains(t, err, tt.want)
			require.NoFileExists(t, path)
			require.ErrorContains(t, Unshare(tt.mem), tt.want)
		})
	}
}

// Filling a file's mapping with a large memory, as ShareInPlace does,
// leaves the process's other goroutines their turns, even with one P:
// the copy goes in chunks the scheduler can preempt between, where one
// memmove over the whole memory kept them all waiting until it ended (a
// device emulator's heartbeat among them). Waits are counted in the
// process's CPU time, which stands still while a loaded host runs other
// processes, so that only this process's own delays show. Most of the
// memory holds data; its last eighth is zeros, which are not copied.
func TestFillLetsOthersRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const size = 128 << 20
	src, err := MapPrivate(size)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(src)) })
	dst, err := MapPrivate(size)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(dst)) })
	page := os.Getpagesize()
	for off := 0; off < size*7/8; off += page {
		src[off] = byte(off/page) | 1
	}

	// The watcher wakes every millisecond and notes the CPU time at which
	// it last did and the most that passed between two wakes of the fill.
	var stop, inCall atomic.Bool
	var longest, lastWake atomic.Int64
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := cpuTime(t)
		for !stop.Load() {
			time.Sleep(time.Millisecond)
			now := cpuTime(t)
			if gap := now - last; inCall.Load() && gap > longest.Load() {
				longest.Store(gap)
			}
			last = now
			lastWake.Store(now)
		}
	}()
	inCall.Store(true)
	start := cpuTime(t)
	fill(dst, src)
	end := cpuTime(t)
	inCall.Store(false)
	// A wait that the fill's end cut short counts too.
	tail := end - max(lastWake.Load(), start)
	stop.Store(true)
	<-watched
	for off := 0; off < size; off += page {
		if dst[off] != src[off] {
			require.Equal(t, src[off], dst[off], "byte %d", off)
		}
	}
	took, gap := time.Duration(end-start), time.Duration(max(longest.Load(), tail))
	t.Logf("filled %d MiB in %v of CPU; the other goroutine waited at most %v of it", size>>20, took, gap)
	if took < 40*time.Millisecond {
		t.Skipf("the fill took %v of CPU, too little to tell a preempted copy from one that is not", took)
	}
	require.Less(t, gap, took/3, "the copy kept the other goroutine off the CPU")
}

// cpuTime is the CPU time this process has used, in nanoseconds.
func cpuTime(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		t.Error(err)
	}
	return ts.Nano()
}
