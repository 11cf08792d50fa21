//go:build linux

package sys

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestAlignment(t *testing.T) {
	page := os.Getpagesize()
	require.Equal(t, page, Alignment(1))
	require.Equal(t, page, Alignment(page))
	require.Equal(t, 1<<20, Alignment(1<<20))
	require.Equal(t, 1<<20, Alignment(1<<21-1))
	require.Equal(t, 8<<20, Alignment(12<<20+64))
}

// Every mapping starts on a multiple of its Alignment, which the kernel
// alone gives only for the page (and, for some files, the huge page), and
// is one mapping of exactly its size: Unmap takes it whole and only once.
func TestMappingsAligned(t *testing.T) {
	dir := t.TempDir()
	for i, size := range []int{100, 4096, 3 << 16, 1 << 20, 12<<20 + 64, 64 << 20} {
		path := filepath.Join(dir, strconv.Itoa(i))
		a, err := CreateShared(path, size)
		require.NoError(t, err)
		b, err := OpenShared(path, size)
		require.NoError(t, err)
		c, err := MapPrivate(size)
		require.NoError(t, err)
		for _, m := range [][]byte{a, b, c} {
			require.Len(t, m, size)
			addr := uintptr(unsafe.Pointer(&m[0]))
			require.Zero(t, addr%uintptr(Alignment(size)), "%d bytes at %#x", size, addr)
		}
		a[size-1] = 7
		require.Equal(t, byte(7), b[size-1], "both mappings are of the file")
		c[size-1] = 9

		require.Error(t, Unmap(c[:size-1]), "a part of a mapping")
		require.NoError(t, Unmap(c))
		require.Error(t, Unmap(c), "a second unmap")
		require.NoError(t, Unmap(b))
		require.NoError(t, Unmap(a))
		require.NoError(t, os.Remove(path))
	}
}

// A retired mapping keeps its addresses: slices of it read zeros and keep
// what is written through them, the file it mapped no longer sees those
// writes, and it is neither unmapped nor retired twice.
func TestRetire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	const size = 3<<16 + 100
	a, err := CreateShared(path, size)
	require.NoError(t, err)
	b, err := OpenShared(path, size)
	require.NoError(t, err)
	c, err := MapPrivate(size)
	require.NoError(t, err)
	a[0], a[size-1], c[5] = 1, 2, 3
	stale, tail := b[:10], b[size-10:]

	require.Error(t, Retire(b[:size-1]), "a part of a mapping")
	require.NoError(t, Retire(b))
	require.NoError(t, Retire(c))
	require.Zero(t, stale[0], "a retired mapping reads zeros")
	require.Zero(t, tail[9])
	require.Zero(t, c[5])
	stale[0], tail[9], c[5] = 7, 8, 9
	require.Equal(t, byte(7), b[0], "and keeps what is written through it")
	require.Equal(t, byte(9), c[5])
	require.Equal(t, byte(1), a[0], "which never reaches the file")
	require.Equal(t, byte(2), a[size-1])

	require.Error(t, Retire(b), "a second retire")
	require.Error(t, Unmap(b), "an unmap of a retired mapping")
	require.Error(t, Unmap(c))
	require.NoError(t, Retire(nil))
	require.NoError(t, Unmap(a))
	require.NoError(t, os.Remove(path))
}
