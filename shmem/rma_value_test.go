package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// TestSmallTransfers moves 1 to 16 bytes at every alignment of both
// buffers, so the transfers that go as one value (1, 2, 4 or 8 aligned
// bytes) and those that go as copies land the same bytes, and neither
// spills past the end.
func TestSmallTransfers(t *testing.T) {
	world(t, 2, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		sym, err := shmem.Malloc[byte](w, 64)
		require.NoError(t, err)
		peer := 1 - pe
		local := make([]byte, 64)
		for n := 1; n <= 16; n++ {
			for at := 0; at < 8; at++ {
				for from := 0; from < 8; from++ {
					clear(sym)
					require.NoError(t, w.BarrierAll())
					for i := range n {
						local[from+i] = byte(pe<<7 | n<<3 | i)
					}
					require.NoError(t, shmem.PutMem(w, sym[at:at+n], local[from:from+n], peer))
					require.NoError(t, w.BarrierAll())
					for i := range 64 {
						want := byte(0)
						if i >= at && i < at+n {
							want = byte(peer<<7 | n<<3 | (i - at))
						}
						require.Equal(t, want, sym[i], "put of %d bytes at %d from %d: byte %d", n, at, from, i)
					}
					got := make([]byte, 24)
					for i := range got {
						got[i] = 0xee
					}
					require.NoError(t, shmem.GetMem(w, got[from:from+n], sym[at:at+n], peer))
					for i := range got {
						want := byte(0xee)
						if i >= from && i < from+n {
							want = byte(pe<<7 | n<<3 | (i - from))
						}
						require.Equal(t, want, got[i], "get of %d bytes at %d into %d: byte %d", n, at, from, i)
					}
					require.NoError(t, w.BarrierAll())
				}
			}
		}
		// Errors are the same whichever way the transfer goes.
		err = shmem.PutMem(w, sym[:8], local[:8], 7)
		require.ErrorIs(t, err, core.ErrInvalid)
		err = shmem.GetMem(w, local[:8], sym[:8], -1)
		require.ErrorIs(t, err, core.ErrInvalid)
		dst := []byte{1, 2, 3, 4, 5, 6, 7, 8}
		require.Error(t, shmem.GetMem(w, dst, sym[:8], 2))
		require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, dst, "a refused get writes nothing")
	})
}
