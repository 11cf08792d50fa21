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

// region is the provider's region type.
type region struct {
	dom  *domain
	size int
}

func (r *region) Local() []byte { return nil }

// foreign is another provider's region.
type foreign struct{}

func (foreign) Local() []byte { return nil }

// endpoint is a provider's endpoint: the kit's, and its domain.
type endpoint struct {
	provkit.Endpoint
	dom *domain
}

func newEndpoint(npes int) *endpoint {
	return &endpoint{Endpoint: provkit.Endpoint{Provider: "kit", NPEs: npes}, dom: &domain{1}}
}

// own is what a provider tells the checks about r.
func (e *endpoint) own(r core.Region) (*region, int) {
	if reg, ok := r.(*region); ok && reg.dom == e.dom {
		return reg, reg.size
	}
	return nil, provkit.Foreign
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

func TestCheckRegion(t *testing.T) {
	e := newEndpoint(4)
	r := &region{dom: e.dom, size: 64}
	check := func(op string, pe int, r core.Region) error {
		_, size := e.own(r)
		return e.CheckRegion(op, pe, r, size)
	}

	require.NoError(t, check("put", 2, r))

	err := check("put", 2, nil)
	opError(t, err, "put", 2, core.ErrInvalid)
	require.ErrorContains(t, err, "nil region")

	err = check("get", 1, foreign{})
	opError(t, err, "get", 1, core.ErrInvalid)
	require.ErrorContains(t, err, "provkit_test.foreign was not created by this endpoint's domain")

	err = check("get", 1, &region{dom: &domain{2}, size: 64})
	opError(t, err, "get", 1, core.ErrInvalid)
	require.ErrorContains(t, err, "not created by this endpoint's domain")

	require.NoError(t, e.CheckOpen("quiet"))
	require.True(t, e.MarkClosed())
	require.False(t, e.MarkClosed(), "closed twice")
	require.True(t, e.Closed())
	opError(t, check("put", 2, r), "put", 2, core.ErrClosed)
	opError(t, e.CheckOpen("quiet"), "quiet", -1, core.ErrClosed)
	opError(t, check("put", 2, nil), "put", 2, core.ErrClosed) // closed says more than a nil region
	opError(t, e.CheckRMA("put", 2, r, 64, 0, 8), "put", 2, core.ErrClosed)
	opError(t, e.CheckValue("put-value", 2, r, 64, 0, 8), "put-value", 2, core.ErrClosed)
	opError(t, e.CheckAtomic("atomic", 2, r, 64, 0, core.AtomicAdd, core.Int64, &sup), "atomic", 2, core.ErrClosed)
}

func TestCheckRMAValueAtomic(t *testing.T) {
	e := newEndpoint(4)
	r := &region{dom: e.dom, size: 64}

	require.NoError(t, e.CheckRMA("put", 3, r, 64, 56, 8))
	err := e.CheckRMA("put", 4, r, 64, 0, 8)
	opError(t, err, "put", 4, core.ErrInvalid)
	var pe *core.PEError
	require.ErrorAs(t, err, &pe)
	opError(t, e.CheckRMA("get", 0, r, 64, 60, 8), "get", 0, core.ErrOutOfBounds)
	opError(t, e.CheckRMA("get", 0, nil, provkit.Foreign, 0, 8), "get", 0, core.ErrInvalid)

	require.NoError(t, e.CheckValue("put-value", 1, r, 64, 8, 8))
	opError(t, e.CheckValue("put-value", 1, r, 64, 8, 3), "put-value", 1, core.ErrInvalid)
	opError(t, e.CheckValue("get-value", 1, r, 64, 60, 8), "get-value", 1, core.ErrOutOfBounds)
	opError(t, e.CheckValue("get-value", 1, foreign{}, provkit.Foreign, 0, 8), "get-value", 1, core.ErrInvalid)

	require.NoError(t, e.CheckAtomic("atomic", 1, r, 64, 8, core.AtomicAdd, core.Int64, &sup))
	err = e.CheckAtomic("atomic", 1, r, 64, 4, core.AtomicAdd, core.Int64, &sup)
	opError(t, err, "atomic", 1, core.ErrInvalid)
	var ae *core.AlignError
	require.ErrorAs(t, err, &ae)
	var none core.AtomicSupport
	opError(t, e.CheckAtomic("fetch-atomic", 1, r, 64, 8, core.AtomicAdd, core.Int64, &none),
		"fetch-atomic", 1, core.ErrNotSupported)
	opError(t, e.CheckAtomic("atomic", 1, nil, provkit.Foreign, 8, core.AtomicAdd, core.Int64, &sup),
		"atomic", 1, core.ErrInvalid)

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
	e := newEndpoint(4)
	r := &region{dom: e.dom, size: 64}
	allocs := testing.AllocsPerRun(100, func() {
		checks(e, r)
	})
	require.Zero(t, allocs)
}

func checks(e *endpoint, r core.Region) {
	_, size := e.own(r)
	for _, err := range [...]error{
		e.CheckRegion("put", 1, r, size),
		e.CheckRMA("put", 1, r, size, 0, 8),
		e.CheckValue("put-value", 1, r, size, 0, 8),
		e.CheckAtomic("atomic", 1, r, size, 0, core.AtomicAdd, core.Int64, &sup),
		e.CheckNonFetching("atomic", 1, core.AtomicAdd, core.Int64),
		e.CheckOpen("quiet"),
	} {
		if err != nil {
			panic(err)
		}
	}
}

func BenchmarkChecks(b *testing.B) {
	e := newEndpoint(4)
	r := &region{dom: e.dom, size: 64}
	b.ReportAllocs()
	for b.Loop() {
		checks(e, r)
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

// WaitNotify tells the function set, and nobody before one is set or
// after it is removed.
func TestWaitNotify(t *testing.T) {
	var n provkit.WaitNotify
	told := 0
	n.Tell()
	n.Set(func() { told++ })
	n.Tell()
	n.Tell()
	n.Set(nil)
	n.Tell()
	require.Equal(t, 2, told)
}
