package loopback_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/core"
)

// reordered is loopback behind an endpoint that delivers writes to a PE
// out of order wherever OpenSHMEM allows it: the first write to a PE
// after a fence, quiet or read of that PE is held back, and every write
// issued after it overtakes it. The held write lands at the next fence,
// quiet or read of that PE, or after holdFor, as a real network's late
// packet would. Loopback (and tcp, one stream per peer) order every
// write anyway, so a fence missing from shmem, or one that orders
// nothing, passes on them; here it fails.
//
// The domain hides loopback's mapped memory (it embeds only
// core.Domain), so every put goes through the endpoint.
const reorderedName = "loopback-reordered"

// holdFor is how long a held write waits for a fence: long beside the
// time between two calls, short beside a test.
const holdFor = 2 * time.Millisecond

type reorderedProvider struct{ core.Provider }

func (reorderedProvider) Name() string     { return reorderedName }
func (reorderedProvider) ByNameOnly() bool { return true }

func (p reorderedProvider) Open(cfg *core.Config) (core.Domain, error) {
	d, err := p.Provider.Open(cfg)
	if err != nil {
		return nil, err
	}
	return reorderedDomain{d}, nil
}

type reorderedDomain struct{ core.Domain }

func (d reorderedDomain) NewEndpoint(o core.EndpointOptions) (core.Endpoint, error) {
	ep, err := d.Domain.NewEndpoint(o)
	if err != nil {
		return nil, err
	}
	return &reorderedEndpoint{Endpoint: ep, npes: d.Size(), held: map[int]*heldWrite{}}, nil
}

// heldWrite is a write held back; done says it landed.
type heldWrite struct {
	deliver func() error
	done    bool
}

type reorderedEndpoint struct {
	core.Endpoint
	npes int
	mu   sync.Mutex // orders every delivery, the held ones' included
	held map[int]*heldWrite
	err  error // a held write's failure, reported at the next fence or quiet
}

// write issues a write to pe: held back if none is, else at once, ahead
// of the held one. bad is what the contract's checks say of it: a write
// they refuse is never held, so the caller gets the endpoint's own error.
func (e *reorderedEndpoint) write(pe int, bad error, deliver func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if bad != nil {
		if uint(pe) < uint(e.npes) {
			e.land(pe)
		}
		return deliver()
	}
	if e.held[pe] != nil {
		return deliver()
	}
	h := &heldWrite{deliver: deliver}
	e.held[pe] = h
	time.AfterFunc(holdFor, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if !h.done {
			e.land(pe)
		}
	})
	return nil
}

// land delivers pe's held write. Called with mu held.
func (e *reorderedEndpoint) land(pe int) {
	h := e.held[pe]
	if h == nil {
		return
	}
	delete(e.held, pe)
	h.done = true
	if err := h.deliver(); err != nil && e.err == nil {
		e.err = err
	}
}

// landAll delivers every held write, and returns what failed.
func (e *reorderedEndpoint) landAll() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for pe := range e.held {
		e.land(pe)
	}
	err := e.err
	e.err = nil
	return err
}

// read lands pe's held write first: a read of a PE sees this endpoint's
// writes to it.
func (e *reorderedEndpoint) read(pe int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.land(pe)
}

func (e *reorderedEndpoint) Put(pe int, r core.Region, off int, src []byte) error {
	bad := e.checkRMA(pe, r, off, len(src))
	src = slices.Clone(src) // Put returns when src may be reused
	return e.write(pe, bad, func() error { return e.Endpoint.Put(pe, r, off, src) })
}

func (e *reorderedEndpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	return e.write(pe, e.checkRMA(pe, r, off, len(src)), func() error { return e.Endpoint.PutNBI(pe, r, off, src) })
}

func (e *reorderedEndpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	var bad error = errUnchecked
	if r != nil {
		bad = core.CheckValue(pe, e.npes, off, size, len(r.Local()))
	}
	return e.write(pe, bad, func() error { return e.Endpoint.PutValue(pe, r, off, v, size) })
}

func (e *reorderedEndpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	// Held: the non-fetching operations on integers, which every
	// provider executes, aligned and in bounds.
	bad := core.CheckSignal(0, op)
	switch {
	case bad != nil:
	case t != core.Int32 && t != core.Uint32 && t != core.Int64 && t != core.Uint64, off%t.Size() != 0:
		bad = errUnchecked
	default:
		bad = e.checkRMA(pe, r, off, t.Size())
	}
	return e.write(pe, bad, func() error { return e.Endpoint.Atomic(pe, r, off, op, t, operand) })
}

func (e *reorderedEndpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	bad := e.checkRMA(pe, r, off, len(src))
	if bad == nil {
		bad = e.checkRMA(pe, sigR, sigOff, 8)
	}
	if bad == nil {
		bad = core.CheckSignal(sigOff, op)
	}
	src = slices.Clone(src)
	return e.write(pe, bad, func() error { return e.Endpoint.PutSignal(pe, r, off, src, sigR, sigOff, op, operand) })
}

// errUnchecked marks a write the double does not judge: it goes to the
// endpoint at once, which does.
var errUnchecked = errors.New("not checked here")

// checkRMA is the contract's check of n bytes at off in r on pe.
func (e *reorderedEndpoint) checkRMA(pe int, r core.Region, off, n int) error {
	if r == nil {
		return errUnchecked
	}
	return core.CheckRMA(pe, e.npes, off, n, len(r.Local()))
}

func (e *reorderedEndpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	e.read(pe)
	return e.Endpoint.Get(pe, r, off, dst)
}

func (e *reorderedEndpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	e.read(pe)
	return e.Endpoint.GetNBI(pe, r, off, dst)
}

func (e *reorderedEndpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	e.read(pe)
	return e.Endpoint.GetValue(pe, r, off, size)
}

func (e *reorderedEndpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	e.read(pe)
	return e.Endpoint.FetchAtomic(pe, r, off, op, t, operand, compare)
}

func (e *reorderedEndpoint) Fence() error {
	err := e.landAll()
	if ferr := e.Endpoint.Fence(); err == nil {
		err = ferr
	}
	return err
}

func (e *reorderedEndpoint) Quiet() error {
	err := e.landAll()
	if qerr := e.Endpoint.Quiet(); err == nil {
		err = qerr
	}
	return err
}

func (e *reorderedEndpoint) Close() error {
	err := e.landAll()
	if cerr := e.Endpoint.Close(); err == nil {
		err = cerr
	}
	return err
}

func init() {
	p, err := core.Lookup("loopback")
	if err != nil {
		panic(err)
	}
	core.Register(reorderedProvider{p})
}

// The cases whose point is an order OpenSHMEM promises only with a fence
// or quiet, over a provider that keeps no other.
func TestConformanceReordered(t *testing.T) {
	conformance.Run(t, conformance.Harness{Provider: reorderedName, Only: []string{"Fence/", "Signal/"}})
}

// The double reorders: without a fence, a write overtakes the one before
// it to the same PE; with one, they land in order.
func TestReorderedOvertakes(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		var got []string
		inner := &recordingEndpoint{landed: &got}
		e := &reorderedEndpoint{Endpoint: inner, npes: 2, held: map[int]*heldWrite{}}
		r := fakeRegion(make([]byte, 16))
		require.NoError(t, e.Put(1, r, 0, []byte("data")))
		if fenced {
			require.NoError(t, e.Fence())
		}
		require.NoError(t, e.PutValue(1, r, 8, 1, 8))
		require.NoError(t, e.Quiet())
		if fenced {
			require.Equal(t, []string{"put", "fence", "flag", "quiet"}, got)
		} else {
			require.Equal(t, []string{"flag", "put", "quiet"}, got, "the flag overtakes the data")
		}
	}
}

type fakeRegion []byte

func (r fakeRegion) Local() []byte { return r }

// recordingEndpoint records what reaches it.
type recordingEndpoint struct {
	core.Endpoint
	landed *[]string
}

func (r *recordingEndpoint) Put(int, core.Region, int, []byte) error {
	*r.landed = append(*r.landed, "put")
	return nil
}

func (r *recordingEndpoint) PutValue(int, core.Region, int, uint64, int) error {
	*r.landed = append(*r.landed, "flag")
	return nil
}

func (r *recordingEndpoint) Fence() error { *r.landed = append(*r.landed, "fence"); return nil }
func (r *recordingEndpoint) Quiet() error { *r.landed = append(*r.landed, "quiet"); return nil }
