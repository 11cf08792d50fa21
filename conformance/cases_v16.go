package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func v16Cases() []Case {
	return []Case{
		{Name: "Ptr/TeamPtr", Needs: rmaCaps, Shmem: caseTeamPtr},
		{Name: "Quiet/PEQuiet", Needs: rmaCaps, Shmem: casePEQuiet},
	}
}

// OpenSHMEM 1.6, shmem_team_ptr: the address of a team member's copy of a
// symmetric object, by its number in the team, where this PE can reach it
// with loads and stores, and NULL where it cannot. On a team of every
// other PE in reverse order, a member's copy is the one Ptr gives for its
// World number; NULL for a number past the team, a non-symmetric object
// and the nil team.
func caseTeamPtr(t *T, w *shmem.World) {
	n := w.NPEs()
	buf, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err)
	tm, err := w.TeamWorld().SplitStrided(n-1, -1, n, shmem.TeamConfig{})
	require.NoError(t, err)
	for r := range tm.NPEs() {
		wpe := shmem.Translate(tm, r, w.TeamWorld())
		want := shmem.Ptr(w, buf, wpe)
		got := shmem.TeamPtr(tm, buf, r)
		require.Equal(t, len(want), len(got), "team PE %d (world PE %d)", r, wpe)
		if want != nil {
			require.Same(t, &want[0], &got[0], "team PE %d (world PE %d)", r, wpe)
		}
	}
	require.Equal(t, buf, shmem.TeamPtr(tm, buf, tm.MyPE()), "this PE's own copy")
	require.Nil(t, shmem.TeamPtr(tm, buf, tm.NPEs()), "a PE past the team")
	require.Nil(t, shmem.TeamPtr(tm, buf, -1))
	require.Nil(t, shmem.TeamPtr(tm, []int64{1}, 0), "not symmetric")
	require.Nil(t, shmem.TeamPtr[int64](nil, buf, 0), "the invalid team")
	if w.ProviderInfo().Caps.Has(core.CapDirectAccess) && w.TeamShared().NPEs() == n && n > 1 {
		// Every PE on this host: a store through the pointer lands.
		right := (tm.MyPE() + 1) % tm.NPEs()
		p := shmem.TeamPtr(tm, buf, right)
		require.Len(t, p, 4)
		p[2] = int64(500 + w.MyPE())
		require.NoError(t, w.BarrierAll())
		left := shmem.Translate(tm, (tm.MyPE()+tm.NPEs()-1)%tm.NPEs(), w.TeamWorld())
		require.Equal(t, int64(500+left), buf[2])
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, tm.Destroy())
	require.NoError(t, shmem.Free(w, buf))
}

// OpenSHMEM 1.6, shmem_pe_quiet: completes the operations issued to the
// listed PEs, on the default context or the one given, as quiet does for
// all of them; they are visible to every PE when it returns. Each PE puts
// to its right neighbour without blocking, completes them with PEQuiet
// naming that neighbour, then sets a signal there, with no fence between:
// the neighbour that sees the signal sees the data. A PE outside
// the job is an error naming the routine and the entry; an empty list is
// no error.
func casePEQuiet(t *T, w *shmem.World) {
	left, right := neighbours(w)
	buf, err := shmem.Malloc[int64](w, 256)
	require.NoError(t, err)
	flag, err := shmem.Malloc[uint64](w, 1)
	require.NoError(t, err)
	ctx, err := w.NewContext(shmem.ContextOptions{})
	require.NoError(t, err)
	src := make([]int64, 256)
	for round := uint64(1); round <= 4; round++ {
		for i := range src {
			src[i] = int64(w.MyPE())*10000 + int64(round)*1000 + int64(i)
		}
		if round%2 == 1 {
			require.NoError(t, shmem.PutNBI(w, buf, src, right))
			require.NoError(t, w.PEQuiet(right))
		} else {
			require.NoError(t, shmem.PutNBI(ctx, buf, src, right))
			require.NoError(t, ctx.PEQuiet(right, w.MyPE()))
		}
		require.NoError(t, shmem.SetSignal(w, &flag[0], round, right))
		_, err := shmem.SignalWaitUntil(w, &flag[0], shmem.CmpEQ, round)
		require.NoError(t, err)
		for i := range buf {
			require.Equal(t, int64(left)*10000+int64(round)*1000+int64(i), buf[i], "round %d: element %d not complete after pe_quiet", round, i)
		}
		require.NoError(t, w.BarrierAll())
	}
	require.NoError(t, w.PEQuiet(), "an empty list")
	err = w.PEQuiet(right, w.NPEs())
	var pee *core.PEError
	require.ErrorAs(t, err, &pee)
	require.ErrorContains(t, err, "pe_quiet")
	require.ErrorContains(t, err, "target_pes[1]")
	require.ErrorIs(t, ctx.PEQuiet(-1), core.ErrInvalid)
	var none *shmem.Context
	require.ErrorIs(t, none.PEQuiet(right), core.ErrInvalid, "the invalid context")
	require.NoError(t, ctx.Destroy())
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flag))
	require.NoError(t, shmem.Free(w, buf))
}
