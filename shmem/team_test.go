package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func TestTeamWorldAndShared(t *testing.T) {
	world(t, 5, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		tw, sh := w.TeamWorld(), w.TeamShared()
		require.Equal(t, pe, tw.MyPE())
		require.Equal(t, 5, tw.NPEs())
		require.Equal(t, 5, sh.NPEs(), "loopback jobs live on one host")
		for r := range 5 {
			require.Equal(t, r, tw.Member(r))
			require.Equal(t, r, shmem.Translate(tw, r, sh))
		}
		require.Equal(t, -1, tw.Member(5))
		require.Equal(t, -1, shmem.Translate(tw, 5, sh))
		require.Equal(t, -1, shmem.Translate(tw, 0, nil))
		require.ErrorIs(t, sh.Destroy(), core.ErrInvalid)
		require.ErrorIs(t, tw.Destroy(), core.ErrInvalid)
	})
}

func TestSameHost(t *testing.T) {
	hosts := [][]byte{[]byte("a"), []byte("b"), []byte("a"), []byte("b"), []byte("a")}
	require.Equal(t, []int{0, 2, 4}, shmem.SameHost(hosts, 2))
	require.Equal(t, []int{1, 3}, shmem.SameHost(hosts, 1))
	require.Equal(t, []int{0}, shmem.SameHost(hosts[:1], 0))
}

func TestTeamSplitStrided(t *testing.T) {
	world(t, 6, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		tw := w.TeamWorld()
		// Ranks 5, 3, 1: a negative stride.
		odd, err := tw.SplitStrided(5, -2, 3, shmem.TeamConfig{NumContexts: 2})
		require.NoError(t, err)
		if pe%2 == 0 {
			require.Nil(t, odd)
			require.Equal(t, -1, odd.MyPE())
			require.Equal(t, -1, odd.NPEs())
			_, err := odd.SplitStrided(0, 1, 1, shmem.TeamConfig{})
			require.ErrorIs(t, err, core.ErrInvalid)
		} else {
			require.Equal(t, 3, odd.NPEs())
			require.Equal(t, (5-pe)/2, odd.MyPE())
			require.Equal(t, 2, odd.Config().NumContexts)
			require.Equal(t, 5, shmem.Translate(odd, 0, tw))
			require.Equal(t, 1, shmem.Translate(odd, 2, tw))
			// A team of a team: its rank 2 and 0, World PEs 1 and 5.
			sub, err := odd.SplitStrided(2, -2, 2, shmem.TeamConfig{})
			require.NoError(t, err)
			if pe == 3 {
				require.Nil(t, sub)
			} else {
				require.Equal(t, 1, shmem.Translate(sub, 0, tw))
				require.Equal(t, 5, shmem.Translate(sub, 1, tw))
				require.NoError(t, sub.Sync())
				require.NoError(t, sub.Destroy())
				require.ErrorIs(t, sub.Sync(), core.ErrClosed)
				_, err = sub.SplitStrided(0, 1, 1, shmem.TeamConfig{})
				require.ErrorIs(t, err, core.ErrClosed)
			}
			require.NoError(t, odd.Destroy())
		}
		for _, bad := range [][3]int{{0, 1, 7}, {6, 1, 1}, {0, 0, 2}, {2, -1, 4}, {0, 1, 0}} {
			_, err := tw.SplitStrided(bad[0], bad[1], bad[2], shmem.TeamConfig{})
			require.ErrorIs(t, err, core.ErrInvalid, "split %v", bad)
		}
	})
}

func TestTeamSplit2D(t *testing.T) {
	world(t, 7, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		x, y, err := w.TeamWorld().Split2D(3, shmem.TeamConfig{}, shmem.TeamConfig{})
		require.NoError(t, err)
		// Rows 0-2, 3-5, 6; columns {0,3,6}, {1,4}, {2,5}.
		require.Equal(t, pe%3, x.MyPE())
		require.Equal(t, min(3, 7-pe/3*3), x.NPEs())
		require.Equal(t, pe/3, y.MyPE())
		require.Equal(t, []int{3, 2, 2}[pe%3], y.NPEs())
		var sum [1]int64
		require.NoError(t, shmem.SumReduce(x, sum[:], []int64{int64(pe)}))
		require.Equal(t, []int64{3, 12, 6}[pe/3], sum[0])
		require.NoError(t, shmem.SumReduce(y, sum[:], []int64{int64(pe)}))
		require.Equal(t, []int64{9, 5, 7}[pe%3], sum[0])
		require.NoError(t, x.Destroy())
		require.NoError(t, y.Destroy())
	})
}

// More teams than a small fixed table would hold stay alive at once, and
// each still synchronises on its own.
func TestTeamsManyAlive(t *testing.T) {
	const n = 70
	world(t, 3, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		teams := make([]*shmem.Team, n)
		for i := range teams {
			teams[i], err = w.TeamWorld().SplitStrided(i%2, 1, 2, shmem.TeamConfig{})
			require.NoError(t, err)
		}
		for i, tm := range teams {
			if tm == nil {
				continue
			}
			var got [1]int32
			require.NoError(t, shmem.MaxReduce(tm, got[:], []int32{int32(pe + i)}))
			require.Equal(t, int32(i%2+1+i), got[0])
		}
		for _, tm := range teams {
			require.NoError(t, tm.Destroy())
		}
		// The slots are free again.
		for range n {
			tm, err := w.TeamWorld().SplitStrided(0, 1, 3, shmem.TeamConfig{})
			require.NoError(t, err)
			require.NoError(t, tm.Sync())
			require.NoError(t, tm.Destroy())
		}
	})
}

func TestTeamLimit(t *testing.T) {
	world(t, 2, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		var teams []*shmem.Team
		for {
			tm, err := w.TeamWorld().SplitStrided(0, 1, 2, shmem.TeamConfig{})
			if err != nil {
				var le *shmem.TeamLimitError
				require.ErrorAs(t, err, &le)
				require.ErrorIs(t, err, core.ErrNoMemory)
				break
			}
			teams = append(teams, tm)
		}
		require.GreaterOrEqual(t, len(teams), 64)
		for _, tm := range teams {
			require.NoError(t, tm.Destroy())
		}
	})
}

func TestTeamContext(t *testing.T) {
	world(t, 4, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		buf, err := shmem.Malloc[int64](w, 1)
		require.NoError(t, err)
		// Ranks 3, 1 of the World: team rank 0 is PE 3.
		tm, err := w.TeamWorld().SplitStrided(3, -2, 2, shmem.TeamConfig{NumContexts: 1})
		require.NoError(t, err)
		if tm != nil {
			ctx, err := tm.CreateCtx(shmem.ContextOptions{Private: true})
			require.NoError(t, err)
			require.Same(t, tm, ctx.Team())
			other := 1 - tm.MyPE()
			require.NoError(t, shmem.P(ctx, &buf[0], int64(100+pe), other))
			require.ErrorIs(t, shmem.P(ctx, &buf[0], 1, 2), core.ErrInvalid, "rank 2 is past the team")
			require.NoError(t, ctx.Quiet())
			require.NoError(t, tm.Sync())
			require.Equal(t, int64(100+shmem.Translate(tm, other, w.TeamWorld())), buf[0])
			require.NoError(t, tm.Destroy())
			require.ErrorIs(t, shmem.P(ctx, &buf[0], 1, 0), core.ErrClosed, "destroying the team destroyed its context")
		}
		require.NoError(t, w.BarrierAll())
	})
}

func TestThreadLevel(t *testing.T) {
	world(t, 1, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		require.Equal(t, shmem.ThreadMultiple, w.QueryThread())
	})
	world(t, 2, nil, func(int) []shmem.Option { return []shmem.Option{shmem.WithThreadLevel(shmem.ThreadFunneled)} },
		func(pe int, w *shmem.World, err error) {
			require.NoError(t, err)
			require.Equal(t, shmem.ThreadFunneled, w.QueryThread())
		})
	_, err := shmem.Init(shmem.WithThreadLevel(9))
	require.ErrorIs(t, err, core.ErrInvalid)
	require.ErrorContains(t, err, "ThreadMultiple")
}
