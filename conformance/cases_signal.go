package conformance

import (
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

func signalCases() []Case {
	return []Case{
		{Name: "Signal/PutSignalSet", Needs: rmaCaps, Shmem: caseSignalSet},
		{Name: "Signal/PutSignalAdd", Needs: rmaCaps, Shmem: caseSignalAdd},
		{Name: "Signal/BadInput", Needs: rmaCaps, Shmem: caseSignalBadInput},
		{Name: "Signal/AddSet", Needs: rmaCaps, Shmem: caseSignalAddSet},
		{Name: "Signal/AddSetBadInput", Needs: rmaCaps, Shmem: caseSignalAddSetBadInput},
		{Name: "Core/PutSignal", Needs: core.CapRMA | core.CapAtomic, Core: caseCorePutSignal},
	}
}

// Rounds of data with a signal set to the round number, blocking and
// non-blocking, at sizes up to 64 KiB: whoever sees the signal sees the
// whole of its data.
func caseSignalSet(t *T, w *shmem.World) {
	left, right := neighbours(w)
	const max = 64 << 10
	buf, err := shmem.Malloc[byte](w, max)
	require.NoError(t, err)
	sig, err := shmem.Malloc[uint64](w, 1)
	require.NoError(t, err)
	round := uint64(0)
	for _, size := range []int{0, 1, 8, 4096, max} {
		for _, nbi := range []bool{false, true} {
			round++
			sent := pattern(w.MyPE(), size, int(round))
			put := shmem.PutSignal[byte]
			if nbi {
				put = shmem.PutSignalNBI[byte]
			}
			require.NoError(t, put(w, buf[:size], sent, &sig[0], round, shmem.SignalSet, right), "size %d nbi %v", size, nbi)
			got, err := shmem.SignalWaitUntil(w, &sig[0], shmem.CmpEQ, round)
			require.NoError(t, err)
			require.Equal(t, round, got)
			if !slices.Equal(buf[:size], pattern(left, size, int(round))) {
				t.Fatalf("round %d: signal seen before the %d bytes of data from PE %d", round, size, left)
			}
			v, err := shmem.SignalFetch(w, &sig[0])
			require.NoError(t, err)
			require.Equal(t, round, v)
			require.NoError(t, w.Quiet())
			// The buffer is reused next round: nobody may still read it.
			require.NoError(t, w.BarrierAll())
		}
	}
	require.NoError(t, shmem.Free(w, sig))
	require.NoError(t, shmem.Free(w, buf))
}

// Every PE sends one slot of data to every other PE and adds one to its
// signal: the signal counts arrivals, and at n-1 every slot is there.
func caseSignalAdd(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	const per = 16
	slots, err := shmem.Malloc[int64](w, n*per)
	require.NoError(t, err)
	sig, err := shmem.Malloc[uint64](w, 1)
	require.NoError(t, err)
	mine := make([]int64, per)
	for i := range mine {
		mine[i] = int64(me*1000 + i)
	}
	for k := 1; k < n; k++ {
		pe := (me + k) % n
		require.NoError(t, shmem.PutSignalNBI(w, slots[me*per:(me+1)*per], mine, &sig[0], 1, shmem.SignalAdd, pe))
	}
	require.NoError(t, w.Quiet())
	got, err := shmem.SignalWaitUntil(w, &sig[0], shmem.CmpGE, uint64(n-1))
	require.NoError(t, err)
	require.Equal(t, uint64(n-1), got)
	for pe := range n {
		if pe == me {
			continue
		}
		for i := range per {
			require.Equal(t, int64(pe*1000+i), slots[pe*per+i], "slot %d of PE %d", i, pe)
		}
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, sig))
	require.NoError(t, shmem.Free(w, slots))
}

func caseSignalBadInput(t *T, w *shmem.World) {
	_, right := neighbours(w)
	buf, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err)
	sig, err := shmem.Malloc[uint64](w, 1)
	require.NoError(t, err)
	var local uint64
	src := []int64{1, 2}
	err = shmem.PutSignal(w, buf[:2], src, &sig[0], 1, shmem.SignalOp(9), right)
	require.ErrorIs(t, err, shmem.ErrInvalid, "unknown signal operation")
	require.ErrorIs(t, shmem.PutSignal(w, buf[:2], src, &local, 1, shmem.SignalSet, right), shmem.ErrOutOfBounds, "signal not symmetric")
	require.ErrorIs(t, shmem.PutSignal(w, buf[:1], src, &sig[0], 1, shmem.SignalSet, right), shmem.ErrInvalid, "short destination")
	var pee *core.PEError
	require.ErrorAs(t, shmem.PutSignal(w, buf[:2], src, &sig[0], 1, shmem.SignalSet, w.NPEs()), &pee)
	_, err = shmem.SignalFetch(w, &local)
	require.ErrorIs(t, err, shmem.ErrOutOfBounds)
	_, err = shmem.SignalWaitUntil(w, &sig[0], shmem.Cmp(42), 0)
	require.ErrorIs(t, err, shmem.ErrInvalid)
	require.NoError(t, w.BarrierAll())
	require.Zero(t, sig[0], "a failed put_signal changed the signal")
	require.Equal(t, []int64{0, 0, 0, 0}, buf, "a failed put_signal changed the data")
	require.NoError(t, shmem.Free(w, sig))
	require.NoError(t, shmem.Free(w, buf))
}

// the provider's Endpoint.PutSignal (one operation with CapPutSignal, or
// Put, Fence and Atomic): whoever sees the signal sees the data, at sizes from
// none to past what a frame copies; the endpoint's counter completes what
// it issued; and a bad signal is refused with nothing written.
func caseCorePutSignal(t *T, j CoreJob) {
	d := j.Domain
	me, n := d.Rank(), d.Size()
	right, left := (me+1)%n, (me+n-1)%n
	const max, data = 64 << 10, 64
	r, err := d.NewRegion(data + max)
	require.NoError(t, err)
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	sig := mem.Word64(r.Local(), 0)
	sizes := []int{0, 1, 8, 100, 4096, max}
	for round, size := range sizes {
		want := uint64(round + 1)
		op := core.AtomicWrite
		if round%2 == 1 {
			op = core.AtomicAdd // from round, one more
		}
		operand := want
		if op == core.AtomicAdd {
			operand = 1
		}
		require.NoError(t, ep.PutSignal(right, r, data, pattern(me, size, round), r, 0, op, operand), "size %d", size)
		deadline := time.Now().Add(time.Minute)
		for n := 1; atomic.LoadUint64(sig) < want; n++ {
			if time.Now().After(deadline) {
				t.Fatalf("size %d: signal %d from PE %d not seen in a minute (the word holds %d)", size, want, left, atomic.LoadUint64(sig))
			}
			// A sleep now and then, so that a clock that is virtual
			// (Harness.Bubble), and stands still while this yields, moves.
			if n%1024 == 0 {
				time.Sleep(time.Microsecond)
			} else {
				runtime.Gosched()
			}
		}
		if !slices.Equal(r.Local()[data:data+size], pattern(left, size, round)) {
			t.Fatalf("size %d: signal %d seen before the data from PE %d", size, want, left)
		}
		require.NoError(t, ep.Quiet())
		// The data's place is reused next round: nobody may still read it.
		require.NoError(t, j.Boot.Barrier())
	}
	require.Equal(t, ep.Counter().Issued(), ep.Counter().Completed())
	last := slices.Clone(r.Local())

	src := []byte("eight by")
	var ale *core.AlignError
	require.ErrorAs(t, ep.PutSignal(right, r, data, src, r, 4, core.AtomicWrite, 9), &ale)
	require.ErrorIs(t, ep.PutSignal(right, r, data, src, r, 0, core.AtomicCSwap, 9), core.ErrInvalid)
	require.ErrorIs(t, ep.PutSignal(right, r, data, src, r, 0, core.AtomicRead, 9), core.ErrInvalid)
	var pee *core.PEError
	require.ErrorAs(t, ep.PutSignal(n, r, data, src, r, 0, core.AtomicWrite, 9), &pee)
	var be *core.BoundsError
	require.ErrorAs(t, ep.PutSignal(right, r, data+max, src, r, 0, core.AtomicWrite, 9), &be)
	require.ErrorAs(t, ep.PutSignal(right, r, data, nil, r, data+max, core.AtomicWrite, 9), &be)
	require.NoError(t, ep.Quiet())
	require.NoError(t, j.Boot.Barrier())
	require.Equal(t, last, r.Local(), "a refused put-signal wrote")
	require.NoError(t, ep.Close())
}

// OpenSHMEM 1.6, shmem_signal_add and shmem_signal_set: they update a
// remote signal word atomically with respect to the signal updates of
// put-with-signal, and a fence orders them after earlier puts to the same
// PE. Every PE adds to its right neighbour's word by both routes, on the
// default context and on a context of its own, and the word counts every
// update; then puts data, fences, and sets the word to a round number:
// the neighbour that sees the round sees the data.
func caseSignalAddSet(t *T, w *shmem.World) {
	left, right := neighbours(w)
	sig, err := shmem.Malloc[uint64](w, 1)
	require.NoError(t, err)
	buf, err := shmem.Malloc[int64](w, 64)
	require.NoError(t, err)
	ctx, err := w.NewContext(shmem.ContextOptions{})
	require.NoError(t, err)
	const rounds = 20
	one := []int64{1}
	for i := range rounds {
		require.NoError(t, shmem.AddSignal(w, &sig[0], 1, right))
		require.NoError(t, shmem.AddSignal(ctx, &sig[0], 2, right))
		require.NoError(t, shmem.PutSignalNBI(w, buf[i:i+1], one, &sig[0], 4, shmem.SignalAdd, right))
	}
	require.NoError(t, w.Quiet())
	require.NoError(t, ctx.Quiet())
	got, err := shmem.SignalWaitUntil(w, &sig[0], shmem.CmpGE, 7*rounds)
	require.NoError(t, err)
	require.Equal(t, uint64(7*rounds), got, "an update was lost or doubled")
	require.NoError(t, w.BarrierAll())

	for round := uint64(1); round <= 3; round++ {
		sent := make([]int64, 64)
		for i := range sent {
			sent[i] = int64(w.MyPE())*1000 + int64(round)*100 + int64(i)
		}
		var c shmem.Ctx = w
		fence, quiet := w.Fence, w.Quiet
		if round == 2 {
			c, fence, quiet = ctx, ctx.Fence, ctx.Quiet
		}
		require.NoError(t, shmem.PutNBI(c, buf, sent, right))
		require.NoError(t, fence())
		require.NoError(t, shmem.SetSignal(c, &sig[0], round, right))
		_, err := shmem.SignalWaitUntil(w, &sig[0], shmem.CmpEQ, round)
		require.NoError(t, err)
		for i := range buf {
			require.Equal(t, int64(left)*1000+int64(round)*100+int64(i), buf[i], "round %d: the signal came before the data it was fenced behind", round)
		}
		require.NoError(t, quiet())
		require.NoError(t, w.BarrierAll())
	}
	require.NoError(t, ctx.Destroy())
	require.NoError(t, shmem.Free(w, buf))
	require.NoError(t, shmem.Free(w, sig))
}

// A signal word that is not symmetric and a PE outside the job are errors
// that change nothing.
func caseSignalAddSetBadInput(t *T, w *shmem.World) {
	_, right := neighbours(w)
	sig, err := shmem.Malloc[uint64](w, 1)
	require.NoError(t, err)
	var local uint64
	require.ErrorIs(t, shmem.AddSignal(w, &local, 1, right), shmem.ErrOutOfBounds)
	require.ErrorIs(t, shmem.SetSignal(w, &local, 1, right), shmem.ErrOutOfBounds)
	var pee *core.PEError
	require.ErrorAs(t, shmem.AddSignal(w, &sig[0], 1, w.NPEs()), &pee)
	require.ErrorAs(t, shmem.SetSignal(w, &sig[0], 1, -1), &pee)
	require.NoError(t, w.BarrierAll())
	require.Zero(t, sig[0], "a failed signal update changed the word")
	require.NoError(t, shmem.Free(w, sig))
}
