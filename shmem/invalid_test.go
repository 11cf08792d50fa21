package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// The nil team and the nil context are SHMEM_TEAM_INVALID and
// SHMEM_CTX_INVALID: queries say -1 or nil, get_config and synchronising
// calls refuse them, and destroying them does nothing.
func TestInvalidHandles(t *testing.T) {
	world(t, 3, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		tw := w.TeamWorld()
		cfg, err := tw.GetConfig()
		require.NoError(t, err)
		require.Equal(t, shmem.TeamConfig{}, cfg)

		pair, err := tw.SplitStrided(1, 1, 2, shmem.TeamConfig{NumContexts: 3})
		require.NoError(t, err)
		if pe == 0 {
			require.Nil(t, pair, "a PE the split leaves out gets the invalid team")
			require.Equal(t, -1, pair.MyPE())
			require.Equal(t, -1, pair.NPEs())
			require.Nil(t, pair.World())
			require.Equal(t, shmem.TeamConfig{}, pair.Config())
			_, err := pair.GetConfig()
			require.ErrorIs(t, err, shmem.ErrInvalid)
			require.ErrorIs(t, pair.Sync(), shmem.ErrInvalid)
			ctx, err := pair.CreateCtx(shmem.ContextOptions{})
			require.ErrorIs(t, err, shmem.ErrInvalid)
			require.Nil(t, ctx, "a failed creation gives the invalid context")
			_, err = pair.SplitStrided(0, 1, 1, shmem.TeamConfig{})
			require.ErrorIs(t, err, shmem.ErrInvalid)
			require.NoError(t, pair.Destroy())
		} else {
			cfg, err := pair.GetConfig()
			require.NoError(t, err)
			require.Equal(t, 3, cfg.NumContexts)
			require.NoError(t, pair.Destroy())
			_, err = pair.GetConfig()
			require.ErrorIs(t, err, shmem.ErrClosed, "a destroyed team")
		}

		var none *shmem.Context
		require.NoError(t, none.Destroy())
		require.Nil(t, none.Team())
		require.Nil(t, none.World())
		require.ErrorIs(t, none.Quiet(), shmem.ErrInvalid)
		require.ErrorIs(t, none.Fence(), shmem.ErrInvalid)
		require.NoError(t, w.BarrierAll())
	})
}
