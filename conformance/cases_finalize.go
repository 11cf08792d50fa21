package conformance

import (
	"errors"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func finalizeCases() []Case {
	return []Case{
		{Name: "Memory/StaleAfterFinalize", Needs: rmaCaps, MaxPEs: 3, Shmem: caseStaleAfterFinalize},
		{Name: "Finalize/NotABarrier", Needs: rmaCaps, MinPEs: 2, MaxPEs: 4, Shmem: caseFinalizeNotABarrier},
		{Name: "Finalize/OutsideTheTeam", Needs: rmaCaps, MinPEs: 3, MaxPEs: 4, Shmem: caseFinalizeOutsideTheTeam},
	}
}

// caseStaleAfterFinalize checks core's policy for memory after the end of
// a job (see core.Domain's Close): a program that keeps slices of its heap
// past Finalize, its own blocks and a peer's from Ptr where the provider
// maps peers, reads and writes them without harm. The process lives, a
// stale slice reads zeros where the job had left data, and what a PE
// writes through it stays in that slice.
func caseStaleAfterFinalize(t *T, w *shmem.World) {
	left, right := neighbours(w)
	me := int64(w.MyPE())
	heap, err := shmem.Malloc[int64](w, 1024)
	require.NoError(t, err)
	require.NoError(t, shmem.Put(w, heap[:2], []int64{100 + me, 7}, right))
	require.NoError(t, w.BarrierAll())
	require.Equal(t, 100+int64(left), heap[0], "the put arrived")
	peer := shmem.Ptr(w, heap, right) // nil where peers are not mapped here
	require.NoError(t, w.Finalize())
	require.ErrorIs(t, w.Err(), core.ErrClosed)

	require.Zero(t, heap[0], "a stale block reads zeros, not the job's data")
	require.Zero(t, heap[1])
	require.Zero(t, heap[1023])
	heap[0], heap[1023] = -1-me, 42
	require.Equal(t, -1-me, heap[0], "and keeps what this PE wrote")
	require.Equal(t, int64(42), heap[1023])
	if peer != nil {
		require.Zero(t, peer[0], "a stale view of a peer reads zeros")
		peer[1] = 1000 + me
		require.Equal(t, 1000+me, peer[1])
		require.Zero(t, heap[1], "and is no view of this PE's block")
	}
}

// caseFinalizeNotABarrier: the last PE finalizes while the others wait in
// shmem_barrier_all. Finalize is collective but no barrier: the others'
// barrier must not return as if every PE had reached it (over tcp it once
// did), and must not wait forever either; it fails, naming the PE that
// finalized. The others then finalize too, and the job ends cleanly.
func caseFinalizeNotABarrier(t *T, w *shmem.World) {
	last := w.NPEs() - 1
	require.NoError(t, w.BarrierAll())
	if w.MyPE() == last {
		require.NoError(t, w.Finalize())
		return
	}
	err := w.BarrierAll()
	var fin *shmem.FinalizedError
	require.True(t, errors.As(err, &fin), "barrier_all with PE %d finalized: %v", last, err)
	require.Equal(t, last, fin.PE)
	require.Equal(t, w.MyPE(), fin.Waiter)
	require.ErrorContains(t, err, "barrier_all")
	require.NoError(t, w.Finalize())
}

// caseFinalizeOutsideTheTeam: a PE that finalizes ends the waits of the
// collectives it is a member of, and no others: PE 0 finalizes while the
// rest sync, reduce and broadcast on a team without it.
func caseFinalizeOutsideTheTeam(t *T, w *shmem.World) {
	n := w.NPEs()
	src, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	dst, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	rest, err := w.TeamWorld().SplitStrided(1, 1, n-1, shmem.TeamConfig{})
	require.NoError(t, err)
	if w.MyPE() == 0 {
		require.Nil(t, rest)
		require.NoError(t, w.Finalize())
		return
	}
	for i := range 3 {
		require.NoError(t, rest.Sync())
		src[0] = int64(w.MyPE() + i)
		require.NoError(t, shmem.SumReduce(rest, dst, src))
		require.Equal(t, int64((n-1)*n/2+(n-1)*i), dst[0])
	}
	require.NoError(t, rest.Destroy())
	require.NoError(t, w.Finalize())
}
