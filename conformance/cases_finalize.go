package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func finalizeCases() []Case {
	return []Case{
		{Name: "Memory/StaleAfterFinalize", Needs: rmaCaps, MaxPEs: 3, Shmem: caseStaleAfterFinalize},
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
