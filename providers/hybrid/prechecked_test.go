package hybrid_test

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/hybrid"
)

// The composite checks an operation once and hands what passes to
// loopback's operations without checks (loopback.Prechecked) for a PE of
// its host: valid operations land and count alike to a PE of this host
// and of another, and bad input still gets its error, naming the job's
// PE, from either. With an intra-host transport other than loopback
// (tcp here), the same operations go through its own checked calls. An
// inter-host transport without CapPutSignal (as ntbring) gives an
// endpoint that carries none as one operation, and PutSignal's put, fence
// and atomic land alike.
func TestCheckedOnce(t *testing.T) {
	tcp := registered(t, "tcp")[0]
	for _, c := range []struct {
		name  string
		p     core.Provider // nil: as core.Open composes it
		fast  bool
		joins bool // the endpoint carries a put-with-signal as one
	}{
		{"loopback", nil, true, true},
		{"other-intra", &hybrid.Provider{Inter: tcp, Intra: tcp}, false, true},
		{"inter-without-put-signal", hybrid.Compose(plainProvider{tcp}), true, false},
	} {
		for _, opts := range []core.EndpointOptions{{}, {Serialized: true}} {
			t.Run(c.name+"/"+map[bool]string{false: "shared", true: "serialized"}[opts.Serialized], func(t *testing.T) {
				checkedJob(t, c.p, c.fast, c.joins, opts)
			})
		}
	}
}

// plainProvider is its provider without CapPutSignal: its endpoints put
// with a signal by Put, Fence and Atomic.
type plainProvider struct{ core.Provider }

func (p plainProvider) Info() core.Info {
	info := p.Provider.Info()
	info.Caps &^= core.CapPutSignal
	return info
}

func (p plainProvider) Open(cfg *core.Config) (core.Domain, error) {
	d, err := p.Provider.Open(cfg)
	if err != nil {
		return nil, err
	}
	return plainDomain{d}, nil
}

type plainDomain struct{ core.Domain }

func (d plainDomain) NewEndpoint(opts core.EndpointOptions) (core.Endpoint, error) {
	ep, err := d.Domain.NewEndpoint(opts)
	if err != nil {
		return nil, err
	}
	return plainEndpoint{ep}, nil
}

type plainEndpoint struct{ core.Endpoint }

func (e plainEndpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, v uint64) error {
	return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, v)
}

func checkedJob(t *testing.T, p core.Provider, fast, joins bool, opts core.EndpointOptions) {
	hosts := []string{"a", "a", "b", "b"}
	env := jobEnv(t, nil)
	boots := bootstrap.NewLocal(len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for me, b := range boots {
		wg.Go(func() {
			cfg := &core.Config{Bootstrap: b, JobID: "checked-test", Env: env, HostID: hosts[me]}
			d, err := openPE(cfg, p)
			if err != nil {
				errs[me] = errors.Join(err, b.Close())
				return
			}
			checkedPE(t, b, d, fast, joins, opts)
			errs[me] = errors.Join(d.Close(), b.Close())
		})
	}
	wg.Wait()
	for pe, err := range errs {
		require.NoError(t, err, "PE %d", pe)
	}
}

// checkedPE is one PE's part: it works on the other PE of its host and on
// one of the other host, whose numbers in the job differ from their
// numbers among their host's PEs.
func checkedPE(t *testing.T, b core.Bootstrap, d core.Domain, fast, joins bool, opts core.EndpointOptions) {
	const size = 4096
	me, n := d.Rank(), d.Size()
	same, other := me^1, (me+2)%n
	r, err := d.NewRegion(size)
	if !assert.NoError(t, err) {
		return
	}
	ep, err := d.NewEndpoint(opts)
	if !assert.NoError(t, err) {
		return
	}
	assert.Equal(t, fast, hybrid.FastPath(ep), "loopback serves the PEs of this host without its own checks")
	assert.Equal(t, joins, hybrid.JoinsPutSignal(ep), "the endpoint carries a put-with-signal as one where the inter-host transport does")

	// Valid operations, to both: each PE's values at offsets of its own.
	for _, pe := range []int{same, other} {
		assert.NoError(t, ep.PutValue(pe, r, 8*me, uint64(1000+me), 8))
		assert.NoError(t, ep.Put(pe, r, 64+16*me, pattern(me, 16)))
		assert.NoError(t, ep.PutNBI(pe, r, 256+16*me, pattern(me+50, 16)))
		assert.NoError(t, ep.Atomic(pe, r, 512, core.AtomicAdd, core.Uint64, 1))
		old, err := ep.FetchAtomic(pe, r, 520, core.AtomicAdd, core.Uint64, 1, 0)
		assert.NoError(t, err)
		assert.Less(t, old, uint64(2), "fetch-add on PE %d", pe)
		assert.NoError(t, ep.PutSignal(pe, r, 768+16*me, pattern(me+70, 16), r, 1024, core.AtomicAdd, 1))
	}
	assert.NoError(t, ep.Quiet())
	assert.Equal(t, ep.Counter().Issued(), ep.Counter().Completed())
	assert.NoError(t, b.Barrier())
	loc := r.Local()
	for _, from := range []int{me ^ 1, (me + 2) % n} {
		assert.Equal(t, uint64(1000+from), word(loc[8*from:]), "value from PE %d", from)
		assert.Equal(t, pattern(from, 16), loc[64+16*from:80+16*from], "put from PE %d", from)
		assert.Equal(t, pattern(from+50, 16), loc[256+16*from:272+16*from], "put-nbi from PE %d", from)
		assert.Equal(t, pattern(from+70, 16), loc[768+16*from:784+16*from], "put-signal from PE %d", from)
	}
	assert.Equal(t, uint64(2), word(loc[1024:]), "the two put-signals' adds")
	assert.Equal(t, uint64(2), word(loc[512:]), "the two atomic adds")
	assert.Equal(t, uint64(2), word(loc[520:]), "the two fetch-adds")
	for _, pe := range []int{same, other} {
		v, err := ep.GetValue(pe, r, 8*me, 8)
		assert.NoError(t, err)
		assert.Equal(t, uint64(1000+me), v, "get-value from PE %d", pe)
		got := make([]byte, 16)
		assert.NoError(t, ep.Get(pe, r, 64+16*me, got))
		assert.Equal(t, pattern(me, 16), got, "get from PE %d", pe)
		nbi := make([]byte, 16)
		assert.NoError(t, ep.GetNBI(pe, r, 256+16*me, nbi))
		assert.NoError(t, ep.Quiet())
		assert.Equal(t, pattern(me+50, 16), nbi, "get-nbi from PE %d", pe)
	}
	assert.NoError(t, ep.Quiet())
	assert.Equal(t, ep.Counter().Issued(), ep.Counter().Completed())

	// Bad input, to both, and to PEs outside the job.
	buf := make([]byte, 16)
	for _, pe := range []int{n, -1} {
		var pee *core.PEError
		assert.ErrorAs(t, ep.PutValue(pe, r, 0, 1, 8), &pee, "put-value to PE %d", pe)
		assert.ErrorAs(t, ep.Put(pe, r, 0, buf), &pee, "put to PE %d", pe)
		_, err := ep.FetchAtomic(pe, r, 0, core.AtomicAdd, core.Uint64, 1, 0)
		assert.ErrorAs(t, err, &pee, "fetch-add on PE %d", pe)
	}
	for _, pe := range []int{same, other} {
		var be *core.BoundsError
		var ale *core.AlignError
		var oe *core.OpError
		err := ep.PutValue(pe, r, size-4, 1, 8)
		assert.ErrorAs(t, err, &be, "put-value past the end on PE %d", pe)
		if assert.ErrorAs(t, err, &oe) {
			assert.Equal(t, pe, oe.PE, "the error names the job's PE")
		}
		assert.ErrorAs(t, ep.Put(pe, r, -1, buf), &be, "put at -1 on PE %d", pe)
		assert.ErrorAs(t, ep.Get(pe, r, size-8, buf), &be, "get past the end on PE %d", pe)
		_, err = ep.GetValue(pe, r, 0, 3)
		assert.ErrorIs(t, err, core.ErrInvalid, "value of 3 bytes from PE %d", pe)
		assert.ErrorAs(t, ep.Atomic(pe, r, 4, core.AtomicAdd, core.Uint64, 1), &ale, "misaligned atomic on PE %d", pe)
		_, err = ep.FetchAtomic(pe, r, 12, core.AtomicAdd, core.Uint64, 1, 0)
		assert.ErrorAs(t, err, &ale, "misaligned fetch-add on PE %d", pe)
		assert.ErrorIs(t, ep.Atomic(pe, r, 0, core.AtomicCSwap, core.Uint64, 1), core.ErrInvalid,
			"compare-swap without a compare value on PE %d", pe)
		assert.ErrorIs(t, ep.Atomic(pe, r, 0, core.AtomicOp(99), core.Uint64, 1), core.ErrInvalid)
		_, err = ep.FetchAtomic(pe, r, 0, core.AtomicAdd, core.AtomicType(0), 1, 0)
		assert.ErrorIs(t, err, core.ErrInvalid)
		assert.ErrorIs(t, ep.PutValue(pe, nil, 0, 1, 8), core.ErrInvalid, "nil region")
		assert.NoError(t, ep.Put(pe, r, 0, nil), "an empty put")
		assert.ErrorAs(t, ep.PutSignal(pe, r, 512, buf, r, 1028, core.AtomicAdd, 1), &ale, "misaligned signal to PE %d", pe)
		assert.ErrorIs(t, ep.PutSignal(pe, r, 512, buf, r, 1024, core.AtomicCSwap, 1), core.ErrInvalid, "compare-swap signal to PE %d", pe)
		assert.ErrorAs(t, ep.PutSignal(pe, r, size-8, buf, r, 1024, core.AtomicAdd, 1), &be, "put-signal past the end on PE %d", pe)
	}
	assert.NoError(t, ep.Quiet())
	assert.NoError(t, b.Barrier())
	assert.Equal(t, uint64(2), word(loc[512:]), "bad input must not write")
	assert.Equal(t, uint64(2), word(loc[520:]), "bad input must not write")
	assert.Equal(t, uint64(2), word(loc[1024:]), "bad input must not write")

	// A closed endpoint refuses everything, to either.
	assert.NoError(t, ep.Close())
	for _, pe := range []int{same, other} {
		assert.ErrorIs(t, ep.PutValue(pe, r, 0, 1, 8), core.ErrClosed, "put-value to PE %d", pe)
		assert.ErrorIs(t, ep.Put(pe, r, 0, buf), core.ErrClosed, "put to PE %d", pe)
		assert.ErrorIs(t, ep.PutSignal(pe, r, 0, buf, r, 1024, core.AtomicAdd, 1), core.ErrClosed, "put-signal to PE %d", pe)
		_, err := ep.GetValue(pe, r, 0, 8)
		assert.ErrorIs(t, err, core.ErrClosed, "get-value from PE %d", pe)
		_, err = ep.FetchAtomic(pe, r, 520, core.AtomicAdd, core.Uint64, 1, 0)
		assert.ErrorIs(t, err, core.ErrClosed, "fetch-add on PE %d", pe)
	}
	assert.ErrorIs(t, ep.Quiet(), core.ErrClosed)
	assert.NoError(t, b.Barrier())
	assert.Equal(t, uint64(2), word(loc[520:]), "a closed endpoint must not write")
}

func pattern(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i + 1)
	}
	return b
}

// word reads a word as PutValue stores it: in this host's byte order.
func word(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }
