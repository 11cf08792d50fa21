package core

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fast paths' check (AccessValid) and the slow path's (CheckRMA) agree
// on every access of more than 0 bytes, near the edges and where off+n
// overflows; InBounds says the same for unsigned offsets, as tcp decodes
// them from frames.
func TestRegionPrologueAgrees(t *testing.T) {
	const npes, size = 4, 64
	edges := []int{math.MinInt, -65, -1, 0, 1, 7, 8, 56, 57, 63, 64, 65, math.MaxInt - 1, math.MaxInt}
	for _, pe := range []int{-1, 0, 3, 4} {
		for _, off := range edges {
			for _, n := range edges {
				err := CheckRMA(pe, npes, off, n, size)
				if n > 0 {
					require.Equal(t, err == nil, AccessValid(pe, npes, off, n, size), "pe %d off %d n %d", pe, off, n)
				}
				if pe == 0 {
					require.Equal(t, err == nil, InBounds(off, n, size), "off %d n %d", off, n)
					if off >= 0 && n >= 0 {
						require.Equal(t, err == nil, InBounds(uint64(off), uint64(n), uint64(size)), "unsigned: off %d n %d", off, n)
					}
				}
				var be *BoundsError
				var pee *PEError
				switch {
				case err == nil:
				case errors.As(err, &pee):
					require.ErrorIs(t, err, ErrInvalid)
				case errors.As(err, &be):
					require.ErrorIs(t, err, ErrOutOfBounds)
					require.Equal(t, BoundsError{Offset: off, Len: n, Size: size}, *be)
				default:
					t.Fatalf("pe %d off %d n %d: %v", pe, off, n, err)
				}
			}
		}
	}
	require.False(t, AccessValid(0, npes, 0, 0, size), "an access of 0 bytes takes the slow path")
	require.NoError(t, CheckRMA(0, npes, size, 0, size), "an empty access at the end is valid")
	require.EqualError(t, CheckRMA(4, npes, 0, 8, size), "PE 4 out of range: the job has PEs 0..3")
	require.EqualError(t, CheckBounds(60, 8, size), "access of 8 bytes at offset 60 lies outside the symmetric region of 64 bytes")
}

func TestRegionPrologueAllocatesNothing(t *testing.T) {
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if CheckRMA(1, 4, 8, 8, 64) != nil || !AccessValid(1, 4, 8, 8, 64) {
			t.Fatal("a valid access refused")
		}
	}))
}
