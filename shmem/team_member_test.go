package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// A PE a split leaves out holds the nil team; asking it for a member is
// asking a team with no ranks, as MyPE, NPEs and Translate already treat
// it, not a nil dereference.
func TestNilTeamMember(t *testing.T) {
	var none *shmem.Team
	for _, r := range []int{-1, 0, 1} {
		require.Equal(t, -1, none.Member(r), "rank %d", r)
	}
	world(t, 3, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		tw := w.TeamWorld()
		first, err := tw.SplitStrided(0, 1, 1, shmem.TeamConfig{})
		require.NoError(t, err)
		if pe != 0 {
			require.Nil(t, first)
			require.Equal(t, -1, first.Member(0))
			require.Equal(t, -1, shmem.Translate(first, 0, tw))
			return
		}
		require.Equal(t, 0, first.Member(0))
		require.Equal(t, -1, first.Member(1))
		require.NoError(t, first.Destroy())
	})
}

// Contexts of the World address PEs by World rank: their team is
// TeamWorld, as shmem_ctx_get_team says, never nil.
func TestWorldContextTeam(t *testing.T) {
	world(t, 2, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		ctx, err := w.NewContext(shmem.ContextOptions{})
		require.NoError(t, err)
		require.Same(t, w.TeamWorld(), ctx.Team())
		require.NoError(t, ctx.Destroy())
	})
}
