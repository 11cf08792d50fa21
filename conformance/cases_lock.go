package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

const lockCaps = rmaCaps | core.CapFetchAtomic | core.CapCompareSwap

func lockCases() []Case {
	return []Case{
		{Name: "Lock/MutualExclusion", Needs: lockCaps, Shmem: caseLockMutualExclusion},
		{Name: "Lock/Test", Needs: lockCaps, Shmem: caseLockTest},
		{Name: "Lock/BadInput", Needs: lockCaps, Shmem: caseLockBadInput},
	}
}

// Every PE increments two counters on the last PE with a get and a put,
// not atomically, each under its own lock, taking them in turn: no
// increment may be lost.
func caseLockMutualExclusion(t *T, w *shmem.World) {
	const rounds = 50
	n := w.NPEs()
	locks, err := shmem.Malloc[int64](w, 2)
	require.NoError(t, err)
	counters, err := shmem.Malloc[int64](w, 2)
	require.NoError(t, err)
	home := n - 1
	for r := range rounds {
		lock, counter := &locks[r%2], &counters[r%2]
		require.NoError(t, shmem.SetLock(w, lock))
		v, err := shmem.G(w, counter, home)
		require.NoError(t, err)
		require.NoError(t, shmem.P(w, counter, v+1, home))
		require.NoError(t, shmem.ClearLock(w, lock))
	}
	require.NoError(t, w.BarrierAll())
	if w.MyPE() == home {
		require.Equal(t, []int64{int64(n * rounds / 2), int64(n * rounds / 2)}, counters,
			"increments lost: a lock let two PEs in at once")
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, counters))
	require.NoError(t, shmem.Free(w, locks))
}

// TestLock takes a free lock and refuses a held one.
func caseLockTest(t *T, w *shmem.World) {
	lock, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	if w.MyPE() == 0 {
		got, err := shmem.TestLock(w, &lock[0])
		require.NoError(t, err)
		require.True(t, got, "a free lock")
	}
	require.NoError(t, w.BarrierAll())
	if w.MyPE() != 0 {
		got, err := shmem.TestLock(w, &lock[0])
		require.NoError(t, err)
		require.False(t, got, "PE 0 holds the lock")
	}
	require.NoError(t, w.BarrierAll())
	if w.MyPE() == 0 {
		require.NoError(t, shmem.ClearLock(w, &lock[0]))
	}
	require.NoError(t, w.BarrierAll())
	// Now each PE in turn takes it with TestLock, the others waiting in
	// SetLock behind it.
	for pe := range w.NPEs() {
		if w.MyPE() == pe {
			got, err := shmem.TestLock(w, &lock[0])
			require.NoError(t, err)
			require.True(t, got, "PE %d's turn: the lock is free", pe)
		}
		require.NoError(t, w.BarrierAll())
		if w.MyPE() == pe {
			require.NoError(t, shmem.ClearLock(w, &lock[0]))
		} else {
			require.NoError(t, shmem.SetLock(w, &lock[0]))
			require.NoError(t, shmem.ClearLock(w, &lock[0]))
		}
		require.NoError(t, w.BarrierAll())
	}
	require.NoError(t, shmem.Free(w, lock))
}

func caseLockBadInput(t *T, w *shmem.World) {
	locks, err := shmem.Malloc[int64](w, 2)
	require.NoError(t, err)
	var local int64
	require.ErrorIs(t, shmem.SetLock(w, &local), shmem.ErrOutOfBounds, "lock not symmetric")
	require.ErrorIs(t, shmem.ClearLock(w, &locks[1]), shmem.ErrInvalid, "clear of a lock not held")
	if w.MyPE() == 0 {
		require.NoError(t, shmem.SetLock(w, &locks[0]))
		require.ErrorIs(t, shmem.SetLock(w, &locks[0]), shmem.ErrInvalid, "locks are not recursive")
		_, err := shmem.TestLock(w, &locks[0])
		require.ErrorIs(t, err, shmem.ErrInvalid, "test of a lock this PE holds")
		require.NoError(t, shmem.ClearLock(w, &locks[0]))
		require.ErrorIs(t, shmem.ClearLock(w, &locks[0]), shmem.ErrInvalid, "cleared twice")
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, locks))
}
