package conformance

import (
	"fmt"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

func quietMTCases() []Case {
	return []Case{
		{Name: "Quiet/SharedContextGoroutines", Needs: rmaCaps, Shmem: caseQuietSharedGoroutines},
		{Name: "Quiet/TwoTeamsAtOnce", Needs: rmaCaps, Shmem: caseQuietTwoTeams},
	}
}

// Goroutines share the default context, each putting a large buffer
// without blocking, then quieting, then raising its flag: a quiet must
// complete the operations its caller issued before it, whatever the
// others issued or completed meanwhile, so every word is there when the
// flag is.
func caseQuietSharedGoroutines(t *T, w *shmem.World) {
	const goroutines, words, rounds = 4, 128 << 10, 5
	require.Equal(t, shmem.ThreadMultiple, w.QueryThread())
	left, right := neighbours(w)
	me := w.MyPE()
	data, err := shmem.Malloc[int64](w, goroutines*words)
	require.NoError(t, err)
	flags, err := shmem.Malloc[int64](w, goroutines)
	require.NoError(t, err)
	value := func(pe, round, g, i int) int64 { return int64(pe)<<48 | int64(round)<<40 | int64(g)<<32 | int64(i) }
	srcs := make([][]int64, goroutines)
	for g := range srcs {
		srcs[g] = make([]int64, words)
	}
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				src := srcs[g]
				for i := range src {
					src[i] = value(me, round, g, i)
				}
				if err := shmem.PutNBI(w, data[g*words:(g+1)*words], src, right); err != nil {
					errs <- err
					return
				}
				if err := w.Quiet(); err != nil {
					errs <- err
					return
				}
				if err := shmem.P(w, &flags[g], int64(round), right); err != nil {
					errs <- err
				}
			}()
		}
		// The left neighbour's goroutines raise these flags. A failure is
		// reported once this PE's goroutines are done with the heap.
		var bad []string
		for g := range goroutines {
			if err := shmem.WaitUntil(w, &flags[g], shmem.CmpGE, int64(round)); err != nil {
				bad = append(bad, err.Error())
				break
			}
			missing, first := 0, -1
			for i, v := range data[g*words : (g+1)*words] {
				if v != value(left, round, g, i) {
					if missing++; first < 0 {
						first = i
					}
				}
			}
			if missing > 0 {
				bad = append(bad, fmt.Sprintf("round %d, goroutine %d of PE %d: %d of %d words not there when the flag was (first at %d)",
					round, g, left, missing, words, first))
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Empty(t, bad)
		// Nobody overwrites data a PE is still checking.
		require.NoError(t, w.BarrierAll())
	}
	require.NoError(t, shmem.Free(w, flags))
	require.NoError(t, shmem.Free(w, data))
}

// Two goroutines run barriers and reductions on two teams at once, the
// World's and a duplicate of it, which share the collectives' endpoint:
// one team's quiet or fence must not be satisfied by the other's
// operations, or a barrier signal or a reduction's data lands late.
func caseQuietTwoTeams(t *T, w *shmem.World) {
	const iters, elems = 40, 64
	require.Equal(t, shmem.ThreadMultiple, w.QueryThread())
	n, me := w.NPEs(), w.MyPE()
	tw := w.TeamWorld()
	dup, err := tw.SplitStrided(0, 1, n, shmem.TeamConfig{})
	require.NoError(t, err)
	teams := []*shmem.Team{tw, dup}
	// contribution is what pe adds to element i of iteration it on team k.
	contribution := func(k, it, pe, i int) int64 { return int64((k+1)*1000 + it*100 + pe*10 + i) }
	var wg sync.WaitGroup
	errs := make(chan error, len(teams))
	for k, team := range teams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := make([]int64, elems)
			dst := make([]int64, elems)
			for it := range iters {
				if err := team.Sync(); err != nil {
					errs <- fmt.Errorf("team %d, iteration %d: sync: %w", k, it, err)
					return
				}
				for i := range src {
					src[i] = contribution(k, it, me, i)
				}
				if err := shmem.SumReduce(team, dst, src); err != nil {
					errs <- fmt.Errorf("team %d, iteration %d: sum: %w", k, it, err)
					return
				}
				for i, got := range dst {
					var want int64
					for pe := range n {
						want += contribution(k, it, pe, i)
					}
					if got != want {
						errs <- fmt.Errorf("team %d, iteration %d, element %d: sum %d, want %d", k, it, i, got, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, dup.Destroy())
	require.NoError(t, w.BarrierAll())
}
