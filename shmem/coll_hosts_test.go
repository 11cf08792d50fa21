package shmem_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

// The host-aware collectives give the flat ones' results, byte for byte:
// the same random program of collectives runs on PEs posing as spread
// over hosts and on the same PEs flat, on the World's team and on strided
// teams, and every PE's every result is compared. Floating-point sums may
// combine in another order on hosts, so they are compared between the PEs
// of one run instead; other floating-point results (minima, sums of whole
// numbers) do not depend on the order and are compared with the flat ones.
func TestHostCollectivesMatchFlat(t *testing.T) {
	layouts := [][]int{
		{0, 0, 1, 1},                   // 2 x 2
		{0, 0, 1, 1, 2, 2},             // 3 x 2
		{0, 0, 0, 1, 2, 2},             // 3 + 1 + 2
		{0, 1, 0, 1, 2, 2, 0},          // interleaved
		{0, 0, 1, 2, 3, 3, 4, 5, 5, 0}, // six hosts, a tree of them
	}
	rng := rand.New(rand.NewPCG(16, 3))
	for range 3 {
		n := 3 + rng.IntN(6)
		hostOf := make([]int, n)
		for i := range hostOf {
			hostOf[i] = rng.IntN(1 + n/2)
		}
		layouts = append(layouts, hostOf)
	}
	if testing.Short() {
		layouts = layouts[:3]
	}
	for li, hostOf := range layouts {
		seed := uint64(li)
		t.Run(fmt.Sprint(hostOf), func(t *testing.T) {
			flat := runHostProgram(t, nil, len(hostOf), seed)
			hosts := runHostProgram(t, hostOf, len(hostOf), seed)
			require.Equal(t, len(flat), len(hosts))
			for pe := range flat {
				require.Equal(t, len(flat[pe]), len(hosts[pe]), "PE %d: results", pe)
				for i := range flat[pe] {
					require.Equal(t, flat[pe][i], hosts[pe][i], "PE %d: result %d", pe, i)
				}
			}
		})
	}
}

// hostMost is the most int64 elements a PE gives a collective of the
// program: past the tree and a slot's message.
const hostMost = 3000

// hostLarge is about the most int64 elements of a large reduction of the
// program: more than a piece of the World's bulk area.
const hostLarge = 25000

// runHostProgram runs a random program of collectives, the same for a
// seed, on n PEs posing as on hosts hostOf (flat if nil), and returns what
// each PE's collectives left in dest, in order.
func runHostProgram(t *testing.T, hostOf []int, n int, seed uint64) [][]string {
	out := make([][]string, n)
	var mu sync.Mutex
	world(t, n, nil, func(int) []shmem.Option {
		if hostOf == nil {
			return nil
		}
		return []shmem.Option{shmem.WithHostMap(hostOf)}
	}, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		require.Equal(t, hostOf != nil && hasSeveral(hostOf), w.HostAware())
		require.Equal(t, w.HostAware(), w.TeamWorld().HostReduces(), "the World's large reductions by host")
		var mine []string
		record := func(what string, b []byte) { mine = append(mine, what+": "+string(b)) }
		teams := []*shmem.Team{w.TeamWorld()}
		if n >= 4 {
			odd, err := w.TeamWorld().SplitStrided(1, 2, n/2, shmem.TeamConfig{})
			require.NoError(t, err)
			rev, err := w.TeamWorld().SplitStrided(n-1, -1, n-1, shmem.TeamConfig{})
			require.NoError(t, err)
			teams = append(teams, odd, rev)
		}
		dest, err := shmem.Malloc[int64](w, n*hostMost)
		require.NoError(t, err)
		for ti, tm := range teams {
			if tm == nil {
				continue
			}
			hostProgram(t, tm, dest, fmt.Sprint("team ", ti), seed, record)
		}
		require.NoError(t, w.BarrierAll())
		mu.Lock()
		out[pe] = mine
		mu.Unlock()
	})
	return out
}

func hasSeveral(hostOf []int) bool {
	seen := map[int]bool{}
	for _, h := range hostOf {
		seen[h] = true
	}
	return len(seen) > 1 && len(seen) < len(hostOf)
}

// hostProgram runs the seed's random collectives on tm, every member
// drawing the same ones, and records what they leave.
func hostProgram(t *testing.T, tm *shmem.Team, dest []int64, team string, seed uint64, record func(string, []byte)) {
	pe, n := tm.MyPE(), tm.NPEs()
	rng := rand.New(rand.NewPCG(seed, 7))
	sizes := []int{1, 3, 60, 120, 129, 300, hostMost}
	for step := range 40 {
		require.NoError(t, tm.Sync())
		clear(dest)
		require.NoError(t, tm.Sync())
		k := sizes[rng.IntN(len(sizes))]
		root := rng.IntN(n)
		src := make([]int64, 2*n*k)
		for i := range src {
			src[i] = int64(pe)<<40 ^ int64(i)*0x1e3779b97f4a7c15 ^ int64(step)
		}
		what := fmt.Sprintf("%s step %d", team, step)
		switch op := rng.IntN(13); op {
		case 0:
			require.NoError(t, shmem.Broadcast(tm, dest, src[:k], root))
			record(what+" broadcast", mem.Bytes(dest[:k]))
		case 1:
			require.NoError(t, shmem.FCollect(tm, dest, src[:k]))
			record(what+" fcollect", mem.Bytes(dest[:n*k]))
		case 2:
			mine := (k + pe*7) % (k + 1)
			require.NoError(t, shmem.Collect(tm, dest, src[:mine]))
			record(what+" collect", mem.Bytes(dest[:n*k]))
		case 3:
			require.NoError(t, shmem.Alltoall(tm, dest, src, k))
			record(what+" alltoall", mem.Bytes(dest[:n*k]))
		case 4:
			m := max(1, k/3)
			require.NoError(t, shmem.Alltoalls(tm, dest, src, 3, 2, m))
			record(what+" alltoalls", mem.Bytes(dest[:(n*m-1)*3+1]))
		case 5:
			require.NoError(t, shmem.SumReduce(tm, dest, src[:k]))
			record(what+" sum", mem.Bytes(dest[:k]))
		case 6:
			require.NoError(t, shmem.XorReduce(tm, dest[:k], src[:k]))
			require.NoError(t, shmem.MaxReduce(tm, dest[k:2*k], src[:k]))
			record(what+" xor, max", mem.Bytes(dest[:2*k]))
		case 7:
			require.NoError(t, tm.Sync())
			record(what+" sync", nil)
		case 8:
			// Every PE's bits of a floating-point sum are the same.
			f := make([]float64, k)
			for i := range f {
				f[i] = float64(src[i]%1000) / 7
			}
			got := make([]float64, k)
			require.NoError(t, shmem.SumReduce(tm, got, f))
			all := mem.Slice[float64](mem.Bytes(dest))
			require.NoError(t, shmem.FCollect(tm, all, got))
			for p := 1; p < n; p++ {
				require.True(t, slices.Equal(all[:k], all[p*k:(p+1)*k]), "%s: float sum on rank %d differs from rank 0's", what, p)
			}
			record(what+" float sum", nil)
		case 9:
			// In place, on counts no host's PE count divides.
			m := 2*k + 1
			a := make([]int32, m)
			for i := range a {
				a[i] = int32(src[i%len(src)] >> (i % 29))
			}
			b := slices.Clone(a)
			require.NoError(t, shmem.AndReduce(tm, a, a))
			require.NoError(t, shmem.OrReduce(tm, b, b))
			record(what+" in-place and, or", append(mem.Bytes(a), mem.Bytes(b)...))
		case 10:
			// Ops and values whose result does not depend on the order:
			// wrapping products, minima, and sums of small whole numbers.
			m := k + 7
			u := make([]uint8, m)
			f32 := make([]float32, m)
			f64 := make([]float64, m)
			c := make([]complex128, m)
			for i := range m {
				v := src[i%len(src)]
				u[i] = uint8(v) | 1
				f32[i] = float32(v%4093) / 3
				f64[i] = float64(v % 1000003)
				c[i] = complex(float64(v%999), float64(v%31))
			}
			pu, mf, sf, sc := make([]uint8, m), make([]float32, m), make([]float64, m), make([]complex128, m)
			require.NoError(t, shmem.ProdReduce(tm, pu, u))
			require.NoError(t, shmem.MinReduce(tm, mf, f32))
			require.NoError(t, shmem.SumReduce(tm, sf, f64))
			require.NoError(t, shmem.SumReduce(tm, sc, c))
			out := slices.Concat(mem.Bytes(pu), mem.Bytes(mf), mem.Bytes(sf), mem.Bytes(sc))
			record(what+" prod, min, sums of whole numbers", out)
		case 11:
			// Larger than a piece: several pieces.
			m := hostLarge + rng.IntN(100)
			if team != "team 0" {
				m = hostMost + rng.IntN(100) // other teams' pieces are their slot's, far smaller
			}
			a := make([]int64, m)
			x := make([]uint32, m)
			for i := range a {
				a[i] = src[i%len(src)] ^ int64(i)
				x[i] = uint32(a[i] >> 7)
			}
			got, gx := make([]int64, m), make([]uint32, m)
			require.NoError(t, shmem.SumReduce(tm, got, a))
			require.NoError(t, shmem.XorReduce(tm, gx, x))
			record(what+" large sum, xor", append(mem.Bytes(got), mem.Bytes(gx)...))
		case 12:
			// Scans, which run between barriers whatever the team's shape,
			// interleaved with the collectives that do not.
			in, ex := make([]int64, k), make([]int64, k)
			require.NoError(t, shmem.SumInscan(tm, in, src[:k]))
			require.NoError(t, shmem.SumExscan(tm, ex, src[:k]))
			record(what+" inscan, exscan", append(mem.Bytes(in), mem.Bytes(ex)...))
		}
	}
}
