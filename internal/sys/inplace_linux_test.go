//go:build linux

package sys

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
