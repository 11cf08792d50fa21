package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func scanCases() []Case {
	return []Case{
		{Name: "Coll/Scan", Needs: rmaCaps, Shmem: caseScan},
		{Name: "Coll/ScanTeams", Needs: rmaCaps, MinPEs: 3, Shmem: caseScanTeams},
		{Name: "Coll/ScanBadInput", Needs: rmaCaps, Shmem: caseScanBadInput},
	}
}

// OpenSHMEM 1.6, shmem_sum_inscan and shmem_sum_exscan: on every member,
// dest[i] becomes the sum of source[i] over the members of rank up to its
// own (inscan) or below it (exscan); dest may be source (in place). The
// sizes cross the pieces a scan moves its data in, and every value is an
// integer, so floating-point sums are exact and the expected bits known.
func caseScan(t *T, w *shmem.World) {
	tm := w.TeamWorld()
	for _, count := range []int{0, 1, 7, 300, 5000} {
		scanOf(t, tm, count, func(r, i int) int64 { return int64(r*100 + i) })
		scanOf(t, tm, count, func(r, i int) float64 { return float64(r+1) - float64(i%7) })
		scanOf(t, tm, count, func(r, i int) complex128 { return complex(float64(r), float64(i%3)) })
		scanOf(t, tm, count, func(r, i int) uint8 { return uint8(r + i) })
	}
}

// Scans on teams that are not the World's, of one PE included, back to
// back with reductions on the same team.
func caseScanTeams(t *T, w *shmem.World) {
	n := w.NPEs()
	for _, size := range []int{1, 2, n - 1} {
		tm, err := w.TeamWorld().SplitStrided(n-1, -1, size, shmem.TeamConfig{})
		require.NoError(t, err)
		if tm != nil {
			for range 2 {
				scanOf(t, tm, 9, func(r, i int) int32 { return int32(r - i) })
				dest, src := make([]int, 1), []int{tm.MyPE()}
				require.NoError(t, shmem.SumReduce(tm, dest, src))
				require.Equal(t, size*(size-1)/2, dest[0])
				scanOf(t, tm, 2000, func(r, i int) float32 { return float32(r * i % 5) })
			}
		}
		require.NoError(t, w.BarrierAll())
		require.NoError(t, tm.Destroy())
	}
}

// scanOf checks SumInscan and SumExscan of count elements of value(rank,
// i), out of place and in place, against sums computed here.
func scanOf[V shmem.ArithElem](t *T, tm *shmem.Team, count int, value func(r, i int) V) {
	me := tm.MyPE()
	src := func() []V {
		s := make([]V, count)
		for i := range s {
			s[i] = value(me, i)
		}
		return s
	}
	want := func(upto int) []V {
		s := make([]V, count)
		for r := 0; r < upto; r++ {
			for i := range s {
				s[i] += value(r, i)
			}
		}
		return s
	}
	dest := make([]V, count+1)
	dest[count] = 42
	require.NoError(t, shmem.SumInscan(tm, dest, src()))
	require.Equal(t, want(me+1), dest[:count], "inscan of %d elements of %T", count, dest[0])
	require.Equal(t, V(42), dest[count], "inscan wrote past its elements")
	require.NoError(t, shmem.SumExscan(tm, dest, src()))
	require.Equal(t, want(me), dest[:count], "exscan of %d elements of %T", count, dest[0])
	s := src()
	require.NoError(t, shmem.SumInscan(tm, s, s))
	require.Equal(t, want(me+1), s, "inscan in place")
	s = src()
	require.NoError(t, shmem.SumExscan(tm, s, s))
	require.Equal(t, want(me), s, "exscan in place")
}

func caseScanBadInput(t *T, w *shmem.World) {
	tm := w.TeamWorld()
	err := shmem.SumInscan(tm, make([]int, 1), make([]int, 2))
	require.ErrorIs(t, err, core.ErrInvalid, "dest too short")
	require.ErrorContains(t, err, "sum_inscan")
	buf := make([]int, 4)
	require.ErrorIs(t, shmem.SumExscan(tm, buf[1:], buf[:3]), core.ErrInvalid, "overlapping dest and source")
	var none *shmem.Team
	require.ErrorIs(t, shmem.SumExscan(none, buf, buf), core.ErrInvalid, "nil team")
	require.NoError(t, w.BarrierAll())
}
