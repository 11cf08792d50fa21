package shmem

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A doing line decodes to what was encoded into it.
func TestDoingLineRoundTrip(t *testing.T) {
	line := make([]byte, cacheLine)
	encodeDoing(line, "team sync", 12345)
	op, since, waiting, ok := decodeDoing(line)
	require.True(t, ok)
	require.True(t, waiting)
	require.Equal(t, "team sync", op)
	require.Equal(t, int64(12345), since)
	encodeDoing(line, "", 0)
	_, _, waiting, ok = decodeDoing(line)
	require.True(t, ok)
	require.False(t, waiting)
	long := "a routine whose name is longer than the line has room for, by far"
	encodeDoing(line, long, 1)
	op, _, _, ok = decodeDoing(line)
	require.True(t, ok)
	require.Equal(t, long[:doingName], op)
}

// FuzzDecodeDoing: a doing line is read from another PE's memory; no bytes
// make the decoder panic, and what it accepts encodes back to the same
// line.
func FuzzDecodeDoing(f *testing.F) {
	line := make([]byte, cacheLine)
	encodeDoing(line, "barrier_all", 1700000000000000000)
	f.Add(line)
	f.Add(make([]byte, cacheLine))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		op, since, waiting, ok := decodeDoing(b)
		if !ok {
			return
		}
		require.Equal(t, since != 0, waiting)
		again := make([]byte, cacheLine)
		encodeDoing(again, op, since)
		require.Equal(t, b, again)
	})
}
