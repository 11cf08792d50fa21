package conformance

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

func v16Cases() []Case {
	return []Case{
		{Name: "Ptr/TeamPtr", Needs: rmaCaps, Shmem: caseTeamPtr},
		{Name: "Quiet/PEQuiet", Needs: rmaCaps, Shmem: casePEQuiet},
		{Name: "Quiet/PEQuietSlowPE", Needs: rmaCaps | core.CapPEQuiet, MinPEs: 3, Core: casePEQuietSlowPE},
		{Name: "Session/Batch", Needs: rmaCaps, Shmem: caseSessionBatch},
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

// The region of casePEQuietSlowPE: a word the atomics add to, then data.
const (
	slowWord = 0
	slowData = 64
	slowSize = 3000
)

// OpenSHMEM 1.6, shmem_pe_quiet: it completes the operations issued to
// the PEs listed, and only those are promised complete. A provider with
// CapPEQuiet waits for the listed PEs alone, which this case shows with
// a PE that is slow without depending on timing: PE 0 holds back the
// acknowledgements of PE n-1 (core.AckHolder), puts and adds to PE 1
// and PE n-1, and QuietPEs of PE 1 must return while PE n-1's operations
// are still incomplete, and as a quiet of PE 1 (its data is there once
// it returns). Then PE 1's acknowledgements are held too: a quiet of PE
// 1 must not return before they come. Once the holds end, a quiet of PE
// n-1 completes the rest. Where the provider cannot hold (its operations
// complete on return), the quiets are checked without the holds.
func casePEQuietSlowPE(t *T, j CoreJob) {
	d := j.Domain
	me, n := d.Rank(), d.Size()
	const fast = 1
	slow := n - 1
	r, err := d.NewRegion(slowData + slowSize)
	require.NoError(t, err)
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	pq, ok := ep.(core.PEQuieter)
	require.True(t, ok, "provider %s has CapPEQuiet, but its endpoint is no core.PEQuieter", j.Info.Name)
	holder, _ := d.(core.AckHolder)
	// A composite's counter is brought up to date when asked for.
	c := func() *core.Counter { return ep.Counter() }
	require.NoError(t, j.Boot.Barrier())

	if me == 0 {
		if holder != nil {
			holder.HoldAcks(slow, true)
		}
		require.NoError(t, ep.PutNBI(slow, r, slowData, pattern(slow, slowSize, 1)))
		require.NoError(t, ep.Atomic(slow, r, slowWord, core.AtomicAdd, core.Uint64, 5))
		slowHeld := holder != nil && c().Completed() < c().Issued()
		require.NoError(t, ep.PutNBI(fast, r, slowData, pattern(fast, slowSize, 1)))
		require.NoError(t, ep.Atomic(fast, r, slowWord, core.AtomicAdd, core.Uint64, 5))
		err := quietWithin(pq, []int{fast}, func() {
			if holder != nil {
				holder.HoldAcks(slow, false)
			}
		})
		require.NoError(t, err, "a quiet of PE %d while PE %d, not listed, is slow to acknowledge", fast, slow)
		if slowHeld {
			require.Less(t, c().Completed(), c().Issued(),
				"the operations to PE %d, whose acknowledgements are held, completed: the hold held nothing", slow)
		}
	}
	require.NoError(t, j.Boot.Barrier())
	if me == fast {
		require.Equal(t, pattern(fast, slowSize, 1), r.Local()[slowData:slowData+slowSize], "PE 0's put, after its quiet of this PE")
		require.Equal(t, uint64(5), *mem.Word64(r.Local(), slowWord), "PE 0's add, after its quiet of this PE")
	}
	require.NoError(t, j.Boot.Barrier())

	if me == 0 {
		if holder != nil {
			holder.HoldAcks(fast, true)
			before := c().Completed()
			require.NoError(t, ep.Atomic(fast, r, slowWord, core.AtomicAdd, core.Uint64, 1))
			if c().Completed() == before { // it waits for its answer
				done := make(chan error, 1)
				go func() { done <- pq.QuietPEs([]int{fast, fast}) }()
				select {
				case err := <-done:
					holder.HoldAcks(fast, false)
					holder.HoldAcks(slow, false)
					t.Fatalf("a quiet of PE %d returned (%v) while its acknowledgement was held", fast, err)
				case <-time.After(50 * time.Millisecond):
				}
				holder.HoldAcks(fast, false)
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(peQuietMax):
					t.Fatalf("a quiet of PE %d did not return once its acknowledgements came", fast)
				}
			} else {
				holder.HoldAcks(fast, false)
				require.NoError(t, pq.QuietPEs([]int{fast}))
			}
			holder.HoldAcks(slow, false)
		}
		require.NoError(t, quietWithin(pq, []int{slow}, nil))
		require.NoError(t, ep.Quiet())
		require.Equal(t, c().Issued(), c().Completed(), "every operation, after a quiet of each PE and a quiet")
	}
	require.NoError(t, j.Boot.Barrier())
	if me == slow {
		require.Equal(t, pattern(slow, slowSize, 1), r.Local()[slowData:slowData+slowSize], "PE 0's put")
		require.Equal(t, uint64(5), *mem.Word64(r.Local(), slowWord), "PE 0's add")
	}
	if me == fast && holder != nil {
		require.Equal(t, uint64(6), *mem.Word64(r.Local(), slowWord), "PE 0's adds")
	}
	require.NoError(t, pq.QuietPEs(nil), "an empty list")
	var pee *core.PEError
	require.ErrorAs(t, pq.QuietPEs([]int{fast, n}), &pee, "a PE outside the job")
	require.ErrorAs(t, pq.QuietPEs([]int{-1}), &pee, "a PE outside the job")
	require.NoError(t, j.Boot.Barrier())
	require.NoError(t, ep.Close())
}

// peQuietMax bounds a quiet of PEs that answer: far longer than one takes.
const peQuietMax = 30 * time.Second

// quietWithin is pq's QuietPEs of pes, or an error if it has not
// returned within peQuietMax; undo then ends what keeps it waiting, so
// the case can end.
func quietWithin(pq core.PEQuieter, pes []int, undo func()) error {
	done := make(chan error, 1)
	go func() { done <- pq.QuietPEs(pes) }()
	select {
	case err := <-done:
		return err
	case <-time.After(peQuietMax):
		if undo != nil {
			undo()
		}
		<-done
		return fmt.Errorf("QuietPEs(%v) has not returned after %v: it waits for a PE it was not given", pes, peQuietMax)
	}
}

// OpenSHMEM 1.6, shmem_ctx_session_start and _stop: a session's options
// are hints that change no operation's completion or ordering. On the
// default context and on a team context, a batch of small puts and
// atomics to the right neighbour, in a session started twice (the
// options combine) and stopped twice (the second does nothing), is
// complete after a quiet as without a session; a session left running
// is completed by quiet too, and its put-with-signal's data is there
// when its signal is. The invalid context takes both calls as no-ops.
func caseSessionBatch(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const n = 512
	buf, err := shmem.Malloc[uint64](w, n+2)
	require.NoError(t, err)
	team, err := w.TeamWorld().SplitStrided(0, 1, w.NPEs(), shmem.TeamConfig{})
	require.NoError(t, err)
	tctx, err := team.CreateCtx(shmem.ContextOptions{})
	require.NoError(t, err)
	cfg := &shmem.SessionConfig{TotalOps: n}
	for round, ctx := range []shmem.Ctx{w, tctx} {
		c := ctx.(interface {
			SessionStart(shmem.SessionOptions, *shmem.SessionConfig, shmem.SessionMask) error
			SessionStop() error
			Quiet() error
		})
		base := uint64(round+1) << 32
		require.NoError(t, c.SessionStart(0, nil, 0))
		require.NoError(t, c.SessionStart(shmem.SessionBatch, cfg, shmem.SessionTotalOps))
		for i := range n / 2 {
			require.NoError(t, shmem.P(ctx, &buf[i], base+uint64(w.MyPE())*n+uint64(i), right))
		}
		for i := n / 2; i < n; i++ {
			require.NoError(t, shmem.AtomicSet(ctx, &buf[i], base+uint64(w.MyPE())*n+uint64(i), right))
		}
		require.NoError(t, shmem.AtomicAdd(ctx, &buf[n], 1, right))
		require.NoError(t, c.SessionStop())
		require.NoError(t, c.SessionStop(), "a second stop does nothing")
		require.NoError(t, c.Quiet())
		require.NoError(t, w.BarrierAll())
		for i := range n {
			require.Equal(t, base+uint64(left)*n+uint64(i), buf[i], "round %d: element %d after the session and a quiet", round, i)
		}
		require.Equal(t, uint64(round+1), buf[n])
		require.NoError(t, w.BarrierAll())
	}

	// A session not stopped: quiet completes it, and a signal follows
	// its data.
	require.NoError(t, w.SessionStart(shmem.SessionBatch, nil, 0))
	src := []uint64{7, uint64(w.MyPE())}
	require.NoError(t, shmem.PutSignal(w, buf[:2], src, &buf[n+1], 1, shmem.SignalSet, right))
	_, err = shmem.SignalWaitUntil(w, &buf[n+1], shmem.CmpEQ, 1)
	require.NoError(t, err)
	require.Equal(t, []uint64{7, uint64(left)}, buf[:2], "the data of a put-with-signal in a session, once its signal came")
	require.NoError(t, w.Quiet())
	require.NoError(t, w.SessionStop())

	var invalid *shmem.Context
	require.NoError(t, invalid.SessionStart(shmem.SessionBatch, cfg, shmem.SessionTotalOps), "the invalid context: no action")
	require.NoError(t, invalid.SessionStop())
	require.NoError(t, w.BarrierAll())
	require.NoError(t, tctx.Destroy())
	require.NoError(t, team.Destroy())
	require.NoError(t, shmem.Free(w, buf))
}
