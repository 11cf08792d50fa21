package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func ctxCases() []Case {
	return []Case{
		{Name: "Context/QuietIsOwn", Needs: rmaCaps, Shmem: caseCtxQuietIsOwn},
		{Name: "Context/Options", Needs: rmaCaps | core.CapFetchAtomic, Shmem: caseCtxOptions},
	}
}

// A quiet on one context returns while another goroutine's context has
// operations it never quiets until then; each context's data is complete
// after its own quiet.
func caseCtxQuietIsOwn(t *T, w *shmem.World) {
	left, right := neighbours(w)
	buf, err := shmem.Malloc[int32](w, 2)
	require.NoError(t, err)
	a, err := w.NewContext(shmem.ContextOptions{Private: true})
	require.NoError(t, err)
	issued, quieted, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		b, err := w.NewContext(shmem.ContextOptions{Private: true})
		if err == nil {
			err = shmem.PutNBI(b, buf[1:], []int32{int32(200 + w.MyPE())}, right)
		}
		close(issued)
		<-quieted // b stays unquieted until a's quiet has returned
		if err == nil {
			err = b.Quiet()
		}
		if err == nil {
			err = b.Destroy()
		}
		done <- err
	}()
	<-issued
	require.NoError(t, shmem.PutNBI(a, buf[:1], []int32{int32(100 + w.MyPE())}, right))
	require.NoError(t, a.Quiet())
	close(quieted)
	require.NoError(t, <-done)
	require.NoError(t, w.BarrierAll())
	require.Equal(t, []int32{int32(100 + left), int32(200 + left)}, buf)
	require.NoError(t, a.Destroy())
	require.NoError(t, shmem.Free(w, buf))
}

// Every option creates a working context; NoStore refuses stores with a
// clear error and still gets and fetches.
func caseCtxOptions(t *T, w *shmem.World) {
	_, right := neighbours(w)
	v, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	v[0] = int64(w.MyPE())
	require.NoError(t, w.BarrierAll())
	for _, o := range []shmem.ContextOptions{{Serialized: true}, {Private: true}, {Serialized: true, Private: true}} {
		c, err := w.NewContext(o)
		require.NoError(t, err)
		got, err := shmem.G(c, &v[0], right)
		require.NoError(t, err)
		require.Equal(t, int64(right), got)
		require.NoError(t, c.Fence())
		require.NoError(t, c.Destroy())
		require.ErrorIs(t, c.Quiet(), core.ErrClosed, "quiet after destroy")
	}
	ns, err := w.NewContext(shmem.ContextOptions{NoStore: true})
	require.NoError(t, err)
	require.ErrorIs(t, shmem.P(ns, &v[0], 1, right), core.ErrInvalid)
	require.ErrorIs(t, shmem.Put(ns, v, []int64{1}, right), core.ErrInvalid)
	require.ErrorIs(t, shmem.AtomicAdd(ns, &v[0], 1, right), core.ErrInvalid)
	err = shmem.PutNBI(ns, v, []int64{1}, right)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.ErrorContains(t, err, "NoStore")
	got, err := shmem.AtomicFetch(ns, &v[0], right)
	require.NoError(t, err)
	require.Equal(t, int64(right), got, "the refused stores wrote nothing")
	require.NoError(t, ns.Destroy())
	require.Same(t, w.TeamWorld(), ns.Team())
	require.NoError(t, w.BarrierAll())
	require.NoError(t, shmem.Free(w, v))
}
