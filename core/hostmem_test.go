package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func TestParseMemAvailable(t *testing.T) {
	n, ok := core.ParseMemAvailable([]byte("MemTotal:       24684096 kB\nMemFree:  1 kB\nMemAvailable:   23685532 kB\nBuffers: 2 kB\n"))
	require.True(t, ok)
	require.Equal(t, int64(23685532)<<10, n)
	for _, bad := range []string{"", "MemTotal: 1 kB\n", "MemAvailable: 12\n", "MemAvailable: x kB\n", "MemAvailable: -1 kB\n", "MemAvailable: 1 MB\n"} {
		_, ok := core.ParseMemAvailable([]byte(bad))
		require.False(t, ok, bad)
	}
	if n, ok := core.MemAvailable(); ok {
		require.Positive(t, n)
	}
}

func FuzzParseMemAvailable(f *testing.F) {
	f.Add([]byte("MemAvailable:   23685532 kB\n"))
	f.Add([]byte("MemAvailable: 9999999999999999999 kB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, ok := core.ParseMemAvailable(b); ok && n < 0 {
			t.Fatalf("negative %d from %q", n, b)
		}
	})
}
