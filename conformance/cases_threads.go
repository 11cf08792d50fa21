package conformance

import (
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func threadCases() []Case {
	return []Case{
		{Name: "Thread/MultipleSharedAndPrivate", Needs: rmaCaps | core.CapFetchAtomic, Shmem: caseThreadsMultiple},
		{Name: "Thread/StoreWakesWaiter", Needs: rmaCaps, Shmem: caseThreadWakes},
	}
}

// Under ThreadMultiple, goroutines share the default context or use
// private ones at once: every fetch-add and put arrives, none twice.
func caseThreadsMultiple(t *T, w *shmem.World) {
	const goroutines, iters = 6, 100
	require.Equal(t, shmem.ThreadMultiple, w.QueryThread())
	left, right := neighbours(w)
	count, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	slots, err := shmem.Malloc[int32](w, goroutines*iters)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c shmem.Ctx = w
			if g%2 == 1 {
				ctx, err := w.NewContext(shmem.ContextOptions{Private: true})
				if err != nil {
					errs <- err
					return
				}
				defer ctx.Destroy()
				c = ctx
			}
			for i := range iters {
				if _, err := shmem.AtomicFetchAdd(c, &count[0], 1, 0); err != nil {
					errs <- err
					return
				}
				if err := shmem.P(c, &slots[g*iters+i], int32(w.MyPE()*1e6+g*iters+i), right); err != nil {
					errs <- err
					return
				}
			}
			if ctx, ok := c.(*shmem.Context); ok {
				if err := ctx.Quiet(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, w.BarrierAll())
	if w.MyPE() == 0 {
		require.Equal(t, int64(w.NPEs()*goroutines*iters), count[0])
	}
	for i, v := range slots {
		require.Equal(t, int32(left*1e6+i), v, "slot %d", i)
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, slots))
	require.NoError(t, shmem.Free(w, count))
}

// A store by one goroutine, through its own context, wakes another
// goroutine's WaitUntil on the same PE.
func caseThreadWakes(t *T, w *shmem.World) {
	flag, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	for round := int64(1); round <= 20; round++ {
		woke := make(chan error, 1)
		go func() { woke <- shmem.WaitUntil(w, &flag[0], shmem.CmpGE, round) }()
		ctx, err := w.NewContext(shmem.ContextOptions{Private: true})
		require.NoError(t, err)
		require.NoError(t, shmem.P(ctx, &flag[0], round, w.MyPE()))
		require.NoError(t, ctx.Quiet())
		require.NoError(t, <-woke)
		require.NoError(t, ctx.Destroy())
	}
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, flag))
}
