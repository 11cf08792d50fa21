package provkit_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/provkit"
)

type domain struct{ id int }

// region is the provider's region type, as provkit sees it.
type region struct {
	dom  *domain
	size int
}

func (r *region) Local() []byte   { return nil }
func (r *region) Domain() *domain { return r.dom }
func (r *region) Size() int       { return r.size }

// foreign is another provider's region.
type foreign struct{}

func (foreign) Local() []byte { return nil }

func newEndpoint(npes int) *provkit.Endpoint {
	return &provkit.Endpoint{Provider: "kit", NPEs: npes}
}

var sup = core.FullAtomics()

// opError checks the frame every error carries: provider, op and PE.
func opError(t *testing.T, err error, op string, pe int, sentinel error) {
	t.Helper()
	var oe *core.OpError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "kit", oe.Provider)
	require.Equal(t, op, oe.Op)
	require.Equal(t, pe, oe.PE)
	require.ErrorIs(t, err, sentinel)
}

func TestTarget(t *testing.T) {
	d := &domain{1}
	r := &region{dom: d, size: 64}
	e := newEndpoint(4)

	got, err := provkit.Target[*region](e, "put", 2, r, d)
	require.NoError(t, err)
	require.Same(t, r, got)

	_, err = provkit.Target[*region](e, "put", 2, nil, d)
	opError(t, err, "put", 2, core.ErrInvalid)
	require.ErrorContains(t, err, "nil region")

	_, err = provkit.Target[*region](e, "get", 1, foreign{}, d)
	opError(t, err, "get", 1, core.ErrInvalid)
	require.ErrorContains(t, err, "provkit_test.foreign was not created by this endpoint's domain")

	_, err = provkit.Target[*region](e, "get", 1, &region{dom: &domain{2}, size: 64}, d)
	opError(t, err, "get", 1, core.ErrInvalid)
	require.ErrorContains(t, err, "not created by this endpoint's domain")

	require.NoError(t, e.CheckOpen("quiet"))
	require.True(t, e.MarkClosed())
	require.False(t, e.MarkClosed(), "closed twice")
	require.True(t, e.Closed())
	got, err = provkit.Target[*region](e, "put", 2, r, d)
	opError(t, err, "put", 2, core.ErrClosed)
	require.Nil(t, got)
	opError(t, e.CheckOpen("quiet"), "quiet", -1, core.ErrClosed)
	_, err = provkit.Target[*region](e, "put", 2, nil, d)
	opError(t, err, "put", 2, core.ErrClosed) // closed says more than a nil region
}

func TestRMAValueAtomic(t *testing.T) {
	d := &domain{1}
	r := &region{dom: d, size: 64}
	e := newEndpoint(4)

	got, err := provkit.RMA[*region](e, "put", 3, r, d, 56, 8)
	require.NoError(t, err)
	require.Same(t, r, got)
	got, err = provkit.RMA[*region](e, "put", 4, r, d, 0, 8)
	opError(t, err, "put", 4, core.ErrInvalid)
	require.Nil(t, got)
	var pe *core.PEError
	require.ErrorAs(t, err, &pe)
	_, err = provkit.RMA[*region](e, "get", 0, r, d, 60, 8)
	opError(t, err, "get", 0, core.ErrOutOfBounds)
	_, err = provkit.RMA[*region](e, "get", 0, nil, d, 0, 8)
	opError(t, err, "get", 0, core.ErrInvalid)

	_, err = provkit.Value[*region](e, "put-value", 1, r, d, 8, 8)
	require.NoError(t, err)
	_, err = provkit.Value[*region](e, "put-value", 1, r, d, 8, 3)
	opError(t, err, "put-value", 1, core.ErrInvalid)
	_, err = provkit.Value[*region](e, "get-value", 1, r, d, 60, 8)
	opError(t, err, "get-value", 1, core.ErrOutOfBounds)

	_, err = provkit.Atomic[*region](e, "atomic", 1, r, d, 8, core.AtomicAdd, core.Int64, &sup)
	require.NoError(t, err)
	_, err = provkit.Atomic[*region](e, "atomic", 1, r, d, 4, core.AtomicAdd, core.Int64, &sup)
	opError(t, err, "atomic", 1, core.ErrInvalid)
	var ae *core.AlignError
	require.ErrorAs(t, err, &ae)
	var none core.AtomicSupport
	_, err = provkit.Atomic[*region](e, "fetch-atomic", 1, r, d, 8, core.AtomicAdd, core.Int64, &none)
	opError(t, err, "fetch-atomic", 1, core.ErrNotSupported)

	require.NoError(t, e.CheckNonFetching("atomic", 1, core.AtomicAdd, core.Int64))
	err = e.CheckNonFetching("atomic", 1, core.AtomicCSwap, core.Int64)
	opError(t, err, "atomic", 1, core.ErrInvalid)
	require.ErrorContains(t, err, "only FetchAtomic takes")
}

func TestErr(t *testing.T) {
	err := provkit.Err("kit", "new region", -1, core.ErrNoMemory)
	opError(t, err, "new region", -1, core.ErrNoMemory)
	require.Equal(t, "kit: new region: out of memory", err.Error())
	opError(t, newEndpoint(1).Err("put", 0, core.ErrPeerLost), "put", 0, core.ErrPeerLost)
}

// A valid operation's checks allocate nothing.
func TestChecksDoNotAllocate(t *testing.T) {
	d := &domain{1}
	r := &region{dom: d, size: 64}
	e := newEndpoint(4)
	allocs := testing.AllocsPerRun(100, func() {
		checks(e, r, d)
	})
	require.Zero(t, allocs)
}

func checks(e *provkit.Endpoint, r *region, d *domain) {
	if _, err := provkit.RMA[*region](e, "put", 1, r, d, 0, 8); err != nil {
		panic(err)
	}
	if _, err := provkit.Value[*region](e, "put-value", 1, r, d, 0, 8); err != nil {
		panic(err)
	}
	if _, err := provkit.Atomic[*region](e, "atomic", 1, r, d, 0, core.AtomicAdd, core.Int64, &sup); err != nil {
		panic(err)
	}
	if err := errors.Join(e.CheckOpen("quiet"), e.CheckNonFetching("atomic", 1, core.AtomicAdd, core.Int64)); err != nil {
		panic(err)
	}
}

func BenchmarkChecks(b *testing.B) {
	d := &domain{1}
	r := &region{dom: d, size: 64}
	e := newEndpoint(4)
	b.ReportAllocs()
	for b.Loop() {
		checks(e, r, d)
	}
}

func TestCloseOnce(t *testing.T) {
	var c provkit.CloseOnce
	var runs int
	release := make(chan struct{})
	boom := errors.New("boom")
	closeDomain := func() error {
		runs++
		<-release
		return boom
	}
	const callers = 8
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- c.Do(closeDomain) }()
	}
	close(release)
	wg.Wait()
	require.NoError(t, c.Do(closeDomain), "a later Close reports nothing")
	var got []error
	for range callers {
		if err := <-errs; err != nil {
			got = append(got, err)
		}
	}
	require.Equal(t, []error{boom}, got, "the first Close reports, once")
	require.Equal(t, 1, runs)
}
