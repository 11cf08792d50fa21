package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// defaultFlowOps is how many operations the flow cases issue without a
// quiet unless the harness says otherwise (Harness.FlowOps): far more than
// any provider's queue, ring or window holds, so a provider whose issue
// path has no flow control (it overruns a fixed queue, or waits for room
// that only a quiet would make) stalls or fails here.
const defaultFlowOps = 100_000

// Flow control is a matter between one endpoint and one target, whatever
// the job's size, and 100,000 operations take minutes on the slower
// providers under the race detector: the cases run on the smallest job.
func flowCases() []Case {
	return []Case{
		{Name: "Flow/ManyP", Needs: rmaCaps, MaxPEs: 2, Shmem: caseFlowP},
		{Name: "Flow/ManyAtomics", Needs: rmaCaps, MaxPEs: 2, Shmem: caseFlowAtomics},
		{Name: "Flow/ManyPutNBI", Needs: rmaCaps, MaxPEs: 2, Shmem: caseFlowPutNBI},
	}
}

// flowValue is what PE pe puts into slot i: every slot differs by sender
// and position, so a lost, stale or misplaced put shows.
func flowValue(pe, i int) int64 { return int64(pe)<<32 | int64(i+1) }

// checkFlow compares every slot at once and reports the first wrong one:
// one assertion per slot would cost seconds.
func checkFlow(t *T, what string, buf []int64, from int) {
	for i, v := range buf {
		if v != flowValue(from, i) {
			t.Fatalf("%s %d of %d from PE %d: holds %#x, want %#x", what, i, len(buf), from, v, flowValue(from, i))
		}
	}
}

// flowBarrier ends a flow case: the barrier completes everything issued
// before it, with no quiet of the caller's own in between.
func flowBarrier(t *T, w *shmem.World, what string) {
	require.NoError(t, w.BarrierAll(), "barrier after %d %s without a quiet", t.flow, what)
}

// flowIssue fails the case at the first operation that fails, naming it.
func flowIssue(t *T, what string, i int, err error) {
	if err != nil {
		require.NoError(t, err, "%s %d of %d, none completed by a quiet", what, i, t.flow)
	}
}

// Single-element P puts to the right neighbour, one per slot, back to back
// with no quiet: every one lands.
func caseFlowP(t *T, w *shmem.World) {
	left, right := neighbours(w)
	buf, err := shmem.Malloc[int64](w, t.flow)
	require.NoError(t, err)
	for i := range t.flow {
		flowIssue(t, "p", i, shmem.P(w, &buf[i], flowValue(w.MyPE(), i), right))
	}
	flowBarrier(t, w, "p puts")
	checkFlow(t, "p", buf, left)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, buf))
}

// Non-fetching increments and adds on one cell of the right neighbour,
// back to back with no quiet: the cell ends at their exact sum.
func caseFlowAtomics(t *T, w *shmem.World) {
	_, right := neighbours(w)
	cell, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	require.NoError(t, w.BarrierAll()) // nobody adds to a cell not yet allocated
	const add = 3
	var want int64
	for i := range t.flow {
		if i%2 == 0 {
			flowIssue(t, "atomic inc", i, shmem.AtomicInc(w, &cell[0], right))
			want++
		} else {
			flowIssue(t, "atomic add", i, shmem.AtomicAdd(w, &cell[0], add, right))
			want += add
		}
	}
	flowBarrier(t, w, "non-fetching atomics")
	require.Equal(t, want, cell[0], "cell after %d increments and adds from the left neighbour", t.flow)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, cell))
}

// 8-byte non-blocking puts to the right neighbour, one per slot, each from
// a source of its own (a source is the caller's until the next quiet), back
// to back with no quiet: every one lands.
func caseFlowPutNBI(t *T, w *shmem.World) {
	left, right := neighbours(w)
	buf, err := shmem.Malloc[int64](w, t.flow)
	require.NoError(t, err)
	src := make([]int64, t.flow)
	for i := range src {
		src[i] = flowValue(w.MyPE(), i)
	}
	for i := range t.flow {
		flowIssue(t, "put-nbi", i, shmem.PutNBI(w, buf[i:i+1], src[i:i+1], right))
	}
	flowBarrier(t, w, "non-blocking puts")
	checkFlow(t, "put-nbi", buf, left)
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, buf))
}
