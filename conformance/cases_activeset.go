package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

func activeSetCases() []Case {
	return []Case{
		{Name: "ActiveSet/Barrier", Needs: rmaCaps, Shmem: caseActiveSetBarrier},
		{Name: "ActiveSet/DataMoving", Needs: rmaCaps, Shmem: caseActiveSetData},
		{Name: "ActiveSet/Reduce", Needs: rmaCaps, Shmem: caseActiveSetReduce},
	}
}

// caseSets are the active sets of a job of n PEs: all of them, the
// shrinking suffixes 1.4 programs use, and the even PEs.
func caseSets(n int) []shmem.ActiveSet {
	sets := []shmem.ActiveSet{}
	for i := range n {
		sets = append(sets, shmem.ActiveSet{Start: i, LogStride: 0, Size: n - i})
	}
	if n >= 3 {
		sets = append(sets, shmem.ActiveSet{Start: 0, LogStride: 1, Size: (n + 1) / 2})
	}
	return sets
}

// Many barriers in a row on one pSync, each ordering a put made before
// it, on every set; then every pSync word is back at SyncValue.
func caseActiveSetBarrier(t *T, w *shmem.World) {
	ps, err := shmem.Malloc[int64](w, shmem.BarrierSyncSize)
	require.NoError(t, err)
	cells, err := shmem.Malloc[int64](w, 2)
	require.NoError(t, err)
	for _, as := range caseSets(w.NPEs()) {
		if me := as.Rank(w.MyPE()); me >= 0 {
			right, left := as.PE((me+1)%as.Size), (me+as.Size-1)%as.Size
			for r := range 100 {
				require.NoError(t, shmem.P(w, &cells[r%2], int64(r*100+me), right))
				require.NoError(t, w.BarrierActiveSet(as, ps))
				if cells[r%2] != int64(r*100+left) {
					t.Fatalf("set %+v, barrier %d: %d from rank %d, want %d", as, r, cells[r%2], left, r*100+left)
				}
			}
		}
		// The next set's first put must not land while this set's
		// members still read their cells.
		require.NoError(t, w.BarrierAll())
	}
	require.Equal(t, []int64{0, 0}, ps, "pSync after the barriers")
}

// Broadcast (the root's dest untouched), fcollect, collect, alltoall and
// alltoalls on every set, 32 and 64 bits, with a barrier on a second pSync
// between rounds as 1.4 programs do.
func caseActiveSetData(t *T, w *shmem.World) {
	n := w.NPEs()
	bcast, err := shmem.Malloc[int64](w, shmem.BcastSyncSize)
	require.NoError(t, err)
	coll, err := shmem.Malloc[int64](w, shmem.CollectSyncSize)
	require.NoError(t, err)
	bar, err := shmem.Malloc[int64](w, shmem.BarrierSyncSize)
	require.NoError(t, err)
	d64, err := shmem.Malloc[int64](w, 4*n)
	require.NoError(t, err)
	d32, err := shmem.Malloc[uint32](w, 4*n)
	require.NoError(t, err)
	for _, as := range caseSets(n) {
		me := as.Rank(w.MyPE())
		if me < 0 {
			continue
		}
		size := as.Size
		for round := range 2 * size {
			root := round % size
			for i := range d64 {
				d64[i] = -1
			}
			require.NoError(t, w.BarrierActiveSet(as, bar))
			src := []int64{int64(me*10 + round), int64(me*10 + round + 1)}
			require.NoError(t, shmem.BroadcastActiveSet(w, d64, src, root, as, bcast))
			want := []int64{int64(root*10 + round), int64(root*10 + round + 1)}
			if me == root {
				want = []int64{-1, -1}
			}
			require.Equal(t, want, d64[:2], "set %+v: broadcast from %d", as, root)
			require.NoError(t, w.BarrierActiveSet(as, bar))

			s32 := make([]uint32, 2*size)
			for i := range s32 {
				s32[i] = uint32(me*1000 + i*10 + round)
			}
			require.NoError(t, shmem.FCollectActiveSet(w, d32, s32[:2], as, coll))
			for r := range size {
				for i := range 2 {
					require.Equal(t, uint32(r*1000+i*10+round), d32[r*2+i], "set %+v: fcollect", as)
				}
			}
			require.NoError(t, shmem.CollectActiveSet(w, d64, src[:(me+round)%3], as, coll))
			at := 0
			for r := range size {
				for i := range (r + round) % 3 {
					require.Equal(t, int64(r*10+round+i), d64[at], "set %+v: collect", as)
					at++
				}
			}
			require.NoError(t, shmem.AlltoallActiveSet(w, d32, s32, 2, as, coll))
			for r := range size {
				for i := range 2 {
					require.Equal(t, uint32(r*1000+(me*2+i)*10+round), d32[r*2+i], "set %+v: alltoall", as)
				}
			}
			s64 := make([]int64, 2*size)
			for i := range s64 {
				s64[i] = int64(me*1000 + i)
			}
			require.NoError(t, shmem.AlltoallsActiveSet(w, d64, s64, 3, 2, 1, as, coll))
			for r := range size {
				require.Equal(t, int64(r*1000+me*2), d64[r*3], "set %+v: alltoalls", as)
			}
		}
	}
	require.NoError(t, w.BarrierAll())
	for _, ps := range [][]int64{bcast, coll, bar} {
		for i, v := range ps {
			require.Equal(t, shmem.SyncValue, v, "pSync word %d after the collectives", i)
		}
	}
}

// Max then min on every set, each with its own pSync and pWrk, one set
// after the other with no barrier, as 1.4 programs do; then sum and
// product on doubles and complex numbers, large enough to go through
// pWrk in several chunks.
func caseActiveSetReduce(t *T, w *shmem.World) {
	n := w.NPEs()
	const count = 1000
	var ps [2][]int64
	var wrk [2][]int64
	for i := range 2 {
		var err error
		ps[i], err = shmem.Malloc[int64](w, shmem.ReduceSyncSize)
		require.NoError(t, err)
		wrk[i], err = shmem.Malloc[int64](w, shmem.ReduceWorkSize(count))
		require.NoError(t, err)
	}
	src, err := shmem.Malloc[int64](w, count)
	require.NoError(t, err)
	dest, err := shmem.Malloc[int64](w, count)
	require.NoError(t, err)
	fsrc, err := shmem.Malloc[float64](w, count)
	require.NoError(t, err)
	fwrk, err := shmem.Malloc[float64](w, shmem.ReduceWorkSize(count))
	require.NoError(t, err)
	csrc, err := shmem.Malloc[complex128](w, 3)
	require.NoError(t, err)
	cwrk, err := shmem.Malloc[complex128](w, shmem.ReduceWorkSize(3))
	require.NoError(t, err)
	for _, as := range caseSets(n) {
		me := as.Rank(w.MyPE())
		if me < 0 {
			continue
		}
		last := as.Size - 1
		for i := range src {
			src[i] = int64(me*3 + i%5)
		}
		require.NoError(t, shmem.MaxToAll(w, dest, src, as, wrk[0], ps[0]))
		for i := range dest {
			if dest[i] != int64(last*3+i%5) {
				t.Fatalf("set %+v: max[%d] = %d, want %d", as, i, dest[i], last*3+i%5)
			}
		}
		require.NoError(t, shmem.MinToAll(w, dest, src, as, wrk[1], ps[1]))
		for i := range dest {
			if dest[i] != int64(i%5) {
				t.Fatalf("set %+v: min[%d] = %d, want %d", as, i, dest[i], i%5)
			}
		}
		for i := range fsrc {
			fsrc[i] = float64(me) + float64(i%4)/4
		}
		require.NoError(t, shmem.SumToAll(w, fsrc, fsrc, as, fwrk, ps[0]))
		for i := range fsrc {
			if want := float64(last*(last+1)/2) + float64(as.Size*(i%4))/4; fsrc[i] != want {
				t.Fatalf("set %+v: in-place sum[%d] = %v, want %v", as, i, fsrc[i], want)
			}
		}
		for i := range csrc {
			csrc[i] = complex(0, 1) // i^size
		}
		require.NoError(t, shmem.ProdToAll(w, csrc, csrc, as, cwrk, ps[1]))
		want := complex(1, 0)
		for range as.Size {
			want *= complex(0, 1)
		}
		require.Equal(t, []complex128{want, want, want}, []complex128(csrc), "set %+v: complex product", as)
	}
	require.NoError(t, w.BarrierAll())
	require.Equal(t, []int64{0, 0}, ps[0])
	require.Equal(t, []int64{0, 0}, ps[1])
}
