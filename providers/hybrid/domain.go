package hybrid

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/loopback"
)

// domain is one PE's membership in a job on both transports.
type domain struct {
	p     *Provider
	cfg   *core.Config
	rank  int
	npes  int
	boot  core.Bootstrap
	hosts core.HostMap
	group *group
	// route[pe] is pe's rank among this host's PEs, or -1 for a PE of
	// another host.
	route   []int
	inter   core.Domain
	intra   core.Domain
	direct  core.DirectAccess // intra's, or nil
	waiting waiting           // the composite's core.LocalWaiter (see waiter.go)
	failers []core.Failer
	atomics core.AtomicSupport // what both transports execute

	mu        sync.Mutex
	nregions  int
	endpoints map[*endpoint]struct{}
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var (
	_ core.Domain       = (*domain)(nil)
	_ core.DirectAccess = (*domain)(nil)
	_ core.Failer       = (*domain)(nil)
	_ core.AckHolder    = (*domain)(nil)

	_ core.TransportDescriber = (*domain)(nil)
)

func (d *domain) Rank() int { return d.rank }
func (d *domain) Size() int { return d.npes }

func (d *domain) opErr(op string, err error) error {
	return &core.OpError{Op: op, PE: -1, Provider: d.p.Name(), Err: err}
}

// region is a symmetric region of both transports: the intra-host
// provider's memory, which the inter-host provider serves as registered
// memory, so a put lands in the same bytes whichever way it came.
type region struct {
	d     *domain
	size  int
	local []byte
	intra core.Region
	inter core.Region
	// lb is intra for loopback's operations without checks, if intra is
	// loopback's (see endpoint).
	lb loopback.PrecheckedRegion
	// reserved: intra is a reserved region of the intra-host provider,
	// committed as Commit asks (NewReservedRegion).
	reserved bool
}

func (r *region) Local() []byte {
	if r.d.closed.Load() {
		return nil
	}
	return r.local
}

// pages rounds n up to whole pages, as RegisterRegion wants its memory.
func pages(n int) int {
	page := os.Getpagesize()
	return (n + page - 1) / page * page
}

// openRegion is what creating and registering a region start with: the
// domain must be open; it returns the region's index in the job's order of
// regions and the provider's bound on a region's size.
func (d *domain) openRegion(op string) (idx, max int, err error) {
	if d.closed.Load() {
		return 0, 0, d.opErr(op, core.ErrClosed)
	}
	d.mu.Lock()
	idx = d.nregions
	d.nregions++
	d.mu.Unlock()
	max = d.p.Info().MaxRegionSize
	if max == 0 {
		max = core.Unbounded
	}
	return idx, max, nil
}

// NewRegion implements core.Domain: the intra-host provider creates the
// region, in memory its host's PEs map, rounded up to whole pages; the
// inter-host provider then registers that memory. Every PE first agrees
// on the size over the whole job, since each transport sees only its own
// part of the job's sizes.
func (d *domain) NewRegion(size int) (core.Region, error) {
	return d.newRegion("new region", size, false)
}

var _ core.Committer = (*domain)(nil)

// NewReservedRegion implements core.Committer: NewRegion with the
// intra-host provider's region reserved, where that provider is a
// Committer (loopback) and the memory stays its own: the inter-host
// provider registers it where it lies (tcp, which never touches memory
// before a peer's operation does). An inter-host provider that moves
// every local PE's part onto memory of its own (ntbring with several PEs
// a host: its device's memory, allocated whole) gets the region
// committed whole, as NewRegion's, and Commit then has nothing to do.
func (d *domain) NewReservedRegion(size int) (core.Region, error) {
	_, takesOver := d.inter.(hostRegisterer)
	_, commits := d.intra.(core.Committer)
	return d.newRegion("new reserved region", size, commits && !(takesOver && d.direct != nil))
}

// Commit implements core.Committer: the intra-host provider commits its
// part of a reserved region, which is the memory of both transports.
// Any other region is committed whole already.
func (d *domain) Commit(r core.Region, off, n int) error {
	const op = "commit"
	reg, ok := r.(*region)
	switch {
	case d.closed.Load():
		return d.opErr(op, core.ErrClosed)
	case !ok || reg.d != d:
		return d.opErr(op, fmt.Errorf("region %T is not one of this domain's: %w", r, core.ErrInvalid))
	case !core.InBounds(off, n, reg.size):
		return d.opErr(op, core.CheckBounds(off, n, reg.size))
	case !reg.reserved || n == 0:
		return nil
	}
	return d.intra.(core.Committer).Commit(reg.intra, off, n)
}

// newRegion is NewRegion, with the intra-host region reserved if reserve.
func (d *domain) newRegion(op string, size int, reserve bool) (core.Region, error) {
	idx, max, err := d.openRegion(op)
	if err != nil {
		return nil, err
	}
	if err = core.AgreeRegion(d.boot, idx, size, max); err != nil {
		return nil, d.opErr(op, err)
	}
	var in core.Region
	if reserve {
		in, err = d.intra.(core.Committer).NewReservedRegion(pages(size))
	} else {
		in, err = d.intra.NewRegion(pages(size))
	}
	if err = agree(d.boot, err); err != nil {
		return nil, d.opErr(op, err)
	}
	mem := in.Local()
	out, err := d.registerInter(in, mem)
	if err != nil {
		return nil, d.opErr(op, err)
	}
	lb, _ := loopback.PrecheckedRegionOf(in)
	return &region{d: d, size: size, local: mem[:size:size], intra: in, inter: out, lb: lb, reserved: reserve}, nil
}

// RegisterRegion implements core.Domain: the intra-host provider moves
// mem onto shared memory in place, and the inter-host provider serves
// the same bytes.
func (d *domain) RegisterRegion(mem []byte) (core.Region, error) {
	const op = "register region"
	idx, max, err := d.openRegion(op)
	if err != nil {
		return nil, err
	}
	if err = core.AgreeRegister(d.boot, idx, mem, max); err != nil {
		return nil, d.opErr(op, err)
	}
	in, err := d.intra.RegisterRegion(mem)
	if err = agree(d.boot, err); err != nil {
		return nil, d.opErr(op, err)
	}
	out, err := d.registerInter(in, mem)
	if err != nil {
		return nil, d.opErr(op, err)
	}
	lb, _ := loopback.PrecheckedRegionOf(in)
	return &region{d: d, size: len(mem), local: mem, intra: in, inter: out, lb: lb}, nil
}

// hostRegisterer is an inter-host domain that lands what comes for any
// PE of its host itself (ntbring with several PEs per host: one lane of
// the host's device per PE): it registers every local PE's part of a
// region at once, local[i] being that of the host's i-th PE as this
// process maps it.
type hostRegisterer interface {
	RegisterHostRegion(mine []byte, local [][]byte) (core.Region, error)
}

// registerInter registers mem, this PE's part of the intra-host region
// in, with the inter-host provider: with every local PE's part where it
// takes them.
func (d *domain) registerInter(in core.Region, mem []byte) (core.Region, error) {
	hr, ok := d.inter.(hostRegisterer)
	if !ok || d.direct == nil {
		return d.inter.RegisterRegion(mem)
	}
	local := make([][]byte, len(d.group.members))
	for i := range local {
		if i == d.group.rank {
			local[i] = mem
		} else {
			local[i] = d.direct.PeerBytes(i, in)
		}
	}
	return hr.RegisterHostRegion(mem, local)
}

// NewEndpoint implements core.Domain: an endpoint of each transport
// behind one.
func (d *domain) NewEndpoint(opts core.EndpointOptions) (core.Endpoint, error) {
	const op = "new endpoint"
	if d.closed.Load() {
		return nil, d.opErr(op, core.ErrClosed)
	}
	in, err := d.intra.NewEndpoint(opts)
	if err != nil {
		return nil, err
	}
	out, err := d.inter.NewEndpoint(opts)
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	e := &endpoint{d: d, intra: in, inter: out, route: d.route, serial: opts.Serialized}
	e.lb, e.fast = loopback.PrecheckedOf(in)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, d.opErr(op, errors.Join(core.ErrClosed, in.Close(), out.Close()))
	}
	if d.endpoints == nil {
		d.endpoints = map[*endpoint]struct{}{}
	}
	d.endpoints[e] = struct{}{}
	e.interSignal = d.p.Inter.Info().Caps&core.CapPutSignal != 0
	return e, nil
}

// PeerBytes implements core.DirectAccess: the PEs of this host only.
func (d *domain) PeerBytes(pe int, r core.Region) []byte {
	reg, ok := r.(*region)
	if !ok || reg.d != d || d.direct == nil || d.closed.Load() || uint(pe) >= uint(d.npes) || d.route[pe] < 0 {
		return nil
	}
	b := d.direct.PeerBytes(d.route[pe], reg.intra)
	if len(b) < reg.size {
		return nil
	}
	return b[:reg.size:reg.size]
}

var _ core.Relayer = (*domain)(nil)

// Relays implements core.Relayer: the intra-host transport carries only
// this PE's own operations, so the inter-host one says.
func (d *domain) Relays() bool {
	r, ok := d.inter.(core.Relayer)
	return ok && r.Relays()
}

// HoldAcks implements core.AckHolder for the PEs of other hosts, through
// the inter-host transport where it is an AckHolder; a PE of this host
// answers nothing (its operations complete on return).
func (d *domain) HoldAcks(pe int, hold bool) {
	if h, ok := d.inter.(core.AckHolder); ok && pe >= 0 && pe < len(d.route) && d.route[pe] < 0 {
		h.HoldAcks(pe, hold)
	}
}

// Err implements core.Failer: either transport's failure is the domain's.
func (d *domain) Err() error {
	for _, f := range d.failers {
		if err := f.Err(); err != nil {
			return err
		}
	}
	return nil
}

func failersOf(ds ...core.Domain) []core.Failer {
	var out []core.Failer
	for _, d := range ds {
		if f, ok := d.(core.Failer); ok {
			out = append(out, f)
		}
	}
	return out
}

// Close implements core.Domain. The inter-host provider closes first:
// its close returns once no PE of another host touches this PE's
// regions, which live in the intra-host provider's memory; the
// intra-host provider's close then waits for this host's PEs and unmaps
// them. Idempotent.
func (d *domain) Close() error {
	first := false
	d.closeOnce.Do(func() {
		first = true
		d.mu.Lock()
		d.closed.Store(true)
		eps := d.endpoints
		d.endpoints = nil
		d.mu.Unlock()
		var errs []error
		for e := range eps {
			e.closed.Store(true)
		}
		d.waiting.close()
		errs = append(errs, d.inter.Close(), d.intra.Close())
		if err := errors.Join(errs...); err != nil {
			d.closeErr = d.opErr("close", err)
		}
	})
	if first {
		return d.closeErr
	}
	return nil
}

func errorsJoin(errs ...error) error { return errors.Join(errs...) }

// globalPE rewrites an intra-host provider's error, which numbers PEs
// among this host's, to number them in the job.
func (d *domain) globalPE(err error) error {
	var oe *core.OpError
	if !errors.As(err, &oe) || oe.PE < 0 || oe.PE >= len(d.group.members) {
		return err
	}
	c := *oe
	c.PE = d.group.members[oe.PE]
	return &c
}
