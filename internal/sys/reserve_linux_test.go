//go:build linux

package sys

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A reserved file takes no blocks until they are committed, a commit
// takes whole pages and never grows the file, and the memory works
// throughout; CreateShared's file is allocated whole at once.
func TestReserveSharedCommitsOnRequest(t *testing.T) {
	dir := t.TempDir()
	const size = 4 << 20
	page := os.Getpagesize()

	whole, err := CreateShared(filepath.Join(dir, "whole"), size)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(whole)) })
	st, err := os.Stat(filepath.Join(dir, "whole"))
	require.NoError(t, err)
	if blocks(st) < size {
		t.Skipf("the file system of %s does not allocate ahead (%d bytes allocated of %d)", dir, blocks(st), size)
	}

	path := filepath.Join(dir, "reserved")
	m, b, err := ReserveShared(path, size)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, Unmap(m)) })
	require.Len(t, m, size)
	require.Zero(t, mem(t, b), "nothing is allocated before a commit")

	require.NoError(t, b.Commit(page+1, 10), "a few bytes inside one page")
	require.Equal(t, int64(page), mem(t, b), "the page they lie in")
	require.NoError(t, b.Commit(page, page), "the same page again")
	require.Equal(t, int64(page), mem(t, b))
	require.NoError(t, b.Commit(size-10, 10), "the last bytes")
	require.Equal(t, int64(2*page), mem(t, b))
	require.NoError(t, b.Commit(0, 0))
	require.Equal(t, int64(2*page), mem(t, b), "an empty commit")

	require.Error(t, b.Commit(size-10, 11), "past the end")
	require.Error(t, b.Commit(-1, 2), "before the start")
	st, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, int64(size), st.Size(), "a commit never grows the file")

	require.NoError(t, b.Commit(0, size))
	require.Equal(t, int64(size), mem(t, b), "everything")
	m[size-1], m[0] = 1, 2
	require.NoError(t, b.Close())
	require.Error(t, b.Commit(0, page), "after Close")
	require.Equal(t, byte(1), m[size-1], "the mapping outlives the descriptor")

	_, _, err = ReserveShared(path, size)
	require.ErrorIs(t, err, os.ErrExist)
	_, _, err = ReserveShared(filepath.Join(dir, "zero"), 0)
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(dir, "zero"))
	require.ErrorIs(t, err, os.ErrNotExist, "a failed reservation leaves no file")
}

func mem(t *testing.T, b *Backing) int64 {
	t.Helper()
	n, err := b.Allocated()
	require.NoError(t, err)
	return n
}

func blocks(st os.FileInfo) int64 { return st.Sys().(*syscall.Stat_t).Blocks * 512 }
