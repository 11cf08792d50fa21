package ntbring

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// TestSessionsChangeNothing: the provider claims no batches and its
// endpoints are no core.Batcher, so a session's batch leaves every put
// as it is (see doc.go, "Blocked moves and sessions"); core's batch
// helpers say so and do nothing.
func TestSessionsChangeNothing(t *testing.T) {
	require.False(t, provider{}.Info().Caps.Has(core.CapBatch))
	var ep core.Endpoint = &endpoint{}
	_, ok := ep.(core.Batcher)
	require.False(t, ok)
	require.False(t, core.StartBatch(ep, 16), "a batch on the ring is not started")
	require.NoError(t, core.StopBatch(ep))
	require.True(t, provider{}.Info().Caps.Has(core.CapBlocks))
	_, ok = ep.(core.BlockMover)
	require.True(t, ok)
}
