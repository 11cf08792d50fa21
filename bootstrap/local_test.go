package bootstrap

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// each runs f on every member at once and returns their errors by rank.
func each(members []*Local, f func(b *Local) error) []error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, b := range members {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(b) }()
	}
	wg.Wait()
	return errs
}

func TestLocalAllgatherRounds(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		members := NewLocal(n)
		for round := range 50 {
			results := make([][][]byte, n)
			errs := each(members, func(b *Local) error {
				var err error
				results[b.Rank()], err = b.Allgather([]byte(fmt.Sprint(b.Rank(), "/", round)))
				return err
			})
			for pe := range n {
				require.NoError(t, errs[pe])
				require.Len(t, results[pe], n)
				for from, d := range results[pe] {
					require.Equal(t, fmt.Sprint(from, "/", round), string(d), "PE %d's view of PE %d", pe, from)
				}
			}
		}
		for _, err := range each(members, (*Local).Barrier) {
			require.NoError(t, err)
		}
		for _, b := range members {
			require.Equal(t, n, b.Size())
			require.NoError(t, b.Err())
			require.NoError(t, b.Close())
		}
		require.Empty(t, members[0].job.rounds, "finished rounds are forgotten")
	}
}

// A killed member is lost: the others' Err says so, and collectives that
// wait for it, pending or later, fail instead of hanging.
func TestLocalKillFailsCollectives(t *testing.T) {
	members := NewLocal(3)
	pending := make(chan error, 2)
	for _, b := range members[:2] {
		go func() { pending <- b.Barrier() }()
	}
	members[2].Kill()
	for range 2 {
		err := <-pending
		var lost *core.PeerLostError
		require.ErrorAs(t, err, &lost)
		require.Equal(t, 2, lost.PE)
	}
	require.ErrorIs(t, members[0].Err(), core.ErrPeerLost)
	require.ErrorIs(t, members[1].Barrier(), core.ErrPeerLost, "a later collective fails at once")
	require.ErrorIs(t, members[2].Barrier(), core.ErrClosed, "the killed member itself is closed")
}

// A member that closes cleanly is not lost, but nothing can wait for it.
func TestLocalCloseIsNotLoss(t *testing.T) {
	members := NewLocal(2)
	require.NoError(t, members[1].Close())
	require.NoError(t, members[1].Close(), "idempotent")
	require.NoError(t, members[0].Err())
	err := members[0].Barrier()
	require.ErrorIs(t, err, core.ErrPeerLost)
	require.ErrorContains(t, err, "left the job before this collective")
}

func TestNewLocalRejectsEmptyJob(t *testing.T) {
	require.Panics(t, func() { NewLocal(0) })
}
