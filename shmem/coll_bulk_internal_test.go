package shmem

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The bulk area's slots are whole cache lines and fit their banks, which
// fit the area; a job too large for a line per slot gets none.
func TestBulkLayout(t *testing.T) {
	require.LessOrEqual(t, bulkBanks+2*bulkBank, bulkOff+bulkSize)
	require.Zero(t, (bulkBanks-bulkOff)%cacheLine)
	for _, n := range []int{1, 2, 3, 8, 1000, 4000} {
		s := bulkSlot(n)
		require.Positive(t, s, "%d PEs", n)
		require.Zero(t, s%cacheLine, "%d PEs", n)
		require.LessOrEqual(t, 2*n*s, bulkBank, "%d PEs", n)
	}
	require.Zero(t, bulkSlot(1<<16))
}
