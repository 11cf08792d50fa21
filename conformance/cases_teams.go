package conformance

import (
	"math"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func teamCases() []Case {
	return []Case{
		{Name: "Team/WorldAndShared", Needs: rmaCaps, Shmem: caseTeamPredefined},
		{Name: "Team/SplitStrided", Needs: rmaCaps, Shmem: caseTeamSplitStrided},
		{Name: "Team/SplitStridedLimits", Needs: rmaCaps, Shmem: caseTeamSplitStridedLimits},
		{Name: "Team/Split2D", Needs: rmaCaps, Shmem: caseTeamSplit2D},
		{Name: "Team/ManyAlive", Needs: rmaCaps, Shmem: caseTeamsManyAlive},
		{Name: "Team/Context", Needs: rmaCaps, Shmem: caseTeamContext},
	}
}

// TeamWorld is every PE in order; TeamShared holds this PE and only PEs
// of its host, and both translate into each other.
func caseTeamPredefined(t *T, w *shmem.World) {
	tw, sh := w.TeamWorld(), w.TeamShared()
	require.Equal(t, w.MyPE(), tw.MyPE())
	require.Equal(t, w.NPEs(), tw.NPEs())
	require.Equal(t, w.MyPE(), sh.Member(sh.MyPE()))
	for r := range sh.NPEs() {
		require.Equal(t, r, shmem.Translate(sh, r, sh))
		require.Equal(t, sh.Member(r), shmem.Translate(sh, r, tw))
	}
	require.Equal(t, -1, shmem.Translate(tw, w.NPEs(), sh))
	require.NoError(t, sh.Sync())
	require.ErrorIs(t, tw.Destroy(), core.ErrInvalid)
}

// The even ranks counted down from the last, a team of that team, and
// arguments that name ranks outside the parent.
func caseTeamSplitStrided(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	tw := w.TeamWorld()
	top := (n - 1) / 2 * 2 // the highest even rank
	evens, err := tw.SplitStrided(top, -2, top/2+1, shmem.TeamConfig{NumContexts: 1})
	require.NoError(t, err)
	if me%2 == 1 {
		require.Nil(t, evens)
	} else {
		require.Equal(t, top/2+1, evens.NPEs())
		require.Equal(t, (top-me)/2, evens.MyPE())
		require.Equal(t, 1, evens.Config().NumContexts)
		require.Equal(t, me, shmem.Translate(evens, evens.MyPE(), tw))
		last, err := evens.SplitStrided(evens.NPEs()-1, 1, 1, shmem.TeamConfig{})
		require.NoError(t, err)
		if me == 0 {
			require.Equal(t, 1, last.NPEs())
			require.Equal(t, 0, shmem.Translate(last, 0, tw))
			var v [1]int16
			require.NoError(t, shmem.SumReduce(last, v[:], []int16{7}))
			require.Equal(t, int16(7), v[0])
		} else {
			require.Nil(t, last)
		}
		require.NoError(t, last.Destroy())
		require.NoError(t, evens.Sync())
		require.NoError(t, evens.Destroy())
		require.ErrorIs(t, evens.Sync(), core.ErrClosed)
	}
	for _, bad := range [][3]int{{0, 1, n + 1}, {n, 1, 1}, {0, 0, 2}, {0, -1, 2}, {0, 1, 0}} {
		_, err := tw.SplitStrided(bad[0], bad[1], bad[2], shmem.TeamConfig{})
		require.ErrorIs(t, err, core.ErrInvalid, "split_strided%v", bad)
	}
	require.NoError(t, w.BarrierAll())
}

// A grid two columns wide: rows and columns reduce on their own.
func caseTeamSplit2D(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	x, y, err := w.TeamWorld().Split2D(2, shmem.TeamConfig{}, shmem.TeamConfig{})
	require.NoError(t, err)
	require.Equal(t, me%2, x.MyPE())
	require.Equal(t, me/2, y.MyPE())
	var got [1]int
	require.NoError(t, shmem.SumReduce(x, got[:], []int{me}))
	want := 0
	for r := me / 2 * 2; r < min(me/2*2+2, n); r++ {
		want += r
	}
	require.Equal(t, want, got[0], "row sum")
	require.NoError(t, shmem.SumReduce(y, got[:], []int{me}))
	want = 0
	for r := me % 2; r < n; r += 2 {
		want += r
	}
	require.Equal(t, want, got[0], "column sum")
	require.NoError(t, x.Destroy())
	require.NoError(t, y.Destroy())
	_, _, err = w.TeamWorld().Split2D(0, shmem.TeamConfig{}, shmem.TeamConfig{})
	require.ErrorIs(t, err, core.ErrInvalid)
}

// 64 teams alive at once, each reducing on its own, then all destroyed
// and their slots used again.
func caseTeamsManyAlive(t *T, w *shmem.World) {
	const many = 64
	me := w.MyPE()
	teams := make([]*shmem.Team, many)
	for i := range teams {
		var err error
		teams[i], err = w.TeamWorld().SplitStrided(i%w.NPEs(), 0, 1, shmem.TeamConfig{})
		require.NoError(t, err)
		if i%3 == 0 { // and some teams of everyone
			require.NoError(t, teams[i].Destroy())
			teams[i], err = w.TeamWorld().SplitStrided(0, 1, w.NPEs(), shmem.TeamConfig{})
			require.NoError(t, err)
		}
	}
	for i, tm := range teams {
		if tm == nil {
			continue
		}
		var got [1]int64
		require.NoError(t, shmem.MaxReduce(tm, got[:], []int64{int64(me + i)}))
		want := int64(me + i)
		if tm.NPEs() > 1 {
			want = int64(w.NPEs() - 1 + i)
		}
		require.Equal(t, want, got[0], "team %d", i)
	}
	for _, tm := range teams {
		require.NoError(t, tm.Destroy())
	}
	for range many {
		tm, err := w.TeamWorld().SplitStrided(0, 1, w.NPEs(), shmem.TeamConfig{})
		require.NoError(t, err)
		require.NoError(t, tm.Sync())
		require.NoError(t, tm.Destroy())
	}
}

// A team context names PEs by team rank; destroying the team destroys it.
func caseTeamContext(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	buf, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	// Everyone, in reverse order: team rank r is PE n-1-r.
	rev, err := w.TeamWorld().SplitStrided(n-1, -1, n, shmem.TeamConfig{NumContexts: 1})
	require.NoError(t, err)
	ctx, err := rev.CreateCtx(shmem.ContextOptions{Serialized: true})
	require.NoError(t, err)
	require.Same(t, rev, ctx.Team())
	right := (rev.MyPE() + 1) % n // team rank, PE (me-1) mod n
	require.NoError(t, shmem.P(ctx, &buf[0], int64(100+me), right))
	require.ErrorIs(t, shmem.P(ctx, &buf[0], 1, n), core.ErrInvalid, "rank n is past the team")
	require.NoError(t, ctx.Quiet())
	require.NoError(t, rev.Sync())
	require.Equal(t, int64(100+(me+1)%n), buf[0])
	require.NoError(t, rev.Sync())
	require.NoError(t, rev.Destroy())
	require.ErrorIs(t, shmem.P(ctx, &buf[0], 1, 0), core.ErrClosed, "the team's context is gone")
	require.NoError(t, shmem.Free(w, buf))
}

// OpenSHMEM 1.6 bounds shmem_team_split_strided's triplet: size is
// positive, a zero stride takes size 1, a negative stride runs down from
// start, and a triplet that leaves the parent's PEs (wraps around) is
// invalid: no team, and an error on every PE. Strides whose product with
// the size overflows are such triplets too, and must not crash.
func caseTeamSplitStridedLimits(t *T, w *shmem.World) {
	n := w.NPEs()
	world := w.TeamWorld()
	one, err := world.SplitStrided(n-1, 0, 1, shmem.TeamConfig{})
	require.NoError(t, err, "stride 0 with size 1")
	if w.MyPE() == n-1 {
		require.NotNil(t, one)
		require.Equal(t, 1, one.NPEs())
	} else {
		require.Nil(t, one)
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, one.Destroy())
	down, err := world.SplitStrided(n-1, -1, n, shmem.TeamConfig{})
	require.NoError(t, err, "a negative stride from the last PE")
	require.Equal(t, n-1-w.MyPE(), down.MyPE())
	require.NoError(t, down.Destroy())
	for _, bad := range []struct {
		what                string
		start, stride, size int
	}{
		{"size 0", 0, 1, 0},
		{"stride 0 with size 2", 0, 0, 2},
		{"wrapping past the last PE", n - 1, 1, 2},
		{"wrapping below PE 0", 0, -1, 2},
		{"a stride whose product overflows", 0, math.MinInt + 1, 3},
		{"a huge stride", 0, math.MaxInt, 2},
	} {
		tm, err := world.SplitStrided(bad.start, bad.stride, bad.size, shmem.TeamConfig{})
		require.ErrorIs(t, err, core.ErrInvalid, bad.what)
		require.ErrorContains(t, err, "split_strided", bad.what)
		require.Nil(t, tm, bad.what)
	}
	require.NoError(t, w.BarrierAll())
}
