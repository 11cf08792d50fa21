package ntbring

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/providers/provkit"
)

// domain is one host's membership in a ring job. It is the same for every
// protocol: it owns the regions, the endpoints, the table of operations in
// flight and the failure state; the protocol moves the bytes.
type domain struct {
	// rank and npes are this host's place in the ring and the ring's
	// hosts, which is what the protocols work in. With one PE per host
	// (lanes 1) they are the job's rank and size; with several, every
	// PE is the node of its lane (its index among its host's PEs) on
	// its host, and the job's numbers are pe and size (see lanes.go).
	rank, npes int
	// topo is how the hosts are cabled: a ring until the device, once
	// open, describes its fabric.
	topo     topology
	pe, size int
	lane     int
	lanes    int
	hostOfPE []int   // by job PE: its host's place in the ring (nil with one lane)
	localOf  []int   // by job PE: its index among its host's PEs
	peAt     [][]int // by host and index: the job's PE
	boot     core.Bootstrap
	s        settings
	dir      string // the job directory: region files live there for a moment
	id       string // the domain's id, part of every file name
	log      *slog.Logger

	proto   protocol // nil in a job of one host: there is no ring
	pending *pending
	bufs    bufPool      // payload buffers for relays and answers
	holds   atomic.Int32 // PEs whose answers are held (HoldAcks): one load per answer
	held    heldAnswers

	failErr atomic.Pointer[error] // the first failure, after which nothing is sent
	closing atomic.Bool           // Close began: links going down are expected
	closed  atomic.Bool
	closer  provkit.CloseOnce
	drops   atomic.Uint64 // transfers dropped as malformed

	// seq counts changes to this host's memory made by other hosts, for
	// LocalWaiter; change wakes its waiters.
	seq    atomic.Uint32
	change core.Event
	armed  atomic.Int32       // waiters armed (WaitArm to WaitDisarm)
	also   provkit.WaitNotify // told of changes too, while armed (core.WaitNotifier)

	mu        sync.RWMutex // guards the fields below
	regions   []*region    // by index; read by workers on every transfer
	nregions  int
	endpoints map[*endpoint]struct{}
}

var (
	_ core.Domain           = (*domain)(nil)
	_ core.LocalWaiter      = (*domain)(nil)
	_ core.Barrierer        = (*domain)(nil)
	_ core.CheckedBarrierer = (*domain)(nil)
	_ core.Failer           = (*domain)(nil)
	_ core.AckHolder        = (*domain)(nil)
)

func (d *domain) Rank() int { return d.pe }
func (d *domain) Size() int { return d.size }

func (d *domain) opErr(op string, err error) error { return provkit.Err(Name, op, -1, err) }

// sideTo is the side a transfer to host dst leaves by.
func (d *domain) sideTo(dst int) ntb.Side {
	s, _ := route(d.rank, dst, d.npes)
	return s
}

// err is the domain's failure, if any.
func (d *domain) err() error {
	if p := d.failErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Err implements core.Failer: the failure that ended the ring for this
// host, wrapping core.ErrPeerLost, or nil.
func (d *domain) Err() error {
	if err := d.err(); err != nil {
		return d.opErr("ring", err)
	}
	return nil
}

// abort ends waits: the domain failed, or the bootstrap lost a PE.
func (d *domain) abort() error {
	if err := d.err(); err != nil {
		return err
	}
	return d.boot.Err()
}

// fail records the domain's first failure, tells the rest of the ring,
// and ends every operation in flight with it. After a failure nothing more
// is sent; the job is over for this host, as a lost peer means in
// OpenSHMEM. Links that go down while the domain closes are expected and
// ignored.
//
// With several PEs per host, a loss the bootstrap reported (a wait that
// abort ended) names a PE of the job, and every PE has been told of it:
// it stays as it is, and no alarm rings and no link goes down. Both name
// hosts, and the lane's neighbours would take either as the loss of a
// host whose PE on this lane lives, and report that PE lost.
func (d *domain) fail(err error) {
	if d.closing.Load() {
		return
	}
	known := d.lanes > 1 && d.fromBootstrap(err)
	lost := d.rank
	var pl *core.PeerLostError
	if !known {
		pl, lost, err = d.blame(err)
	}
	if !d.failErr.CompareAndSwap(nil, &err) {
		return
	}
	d.log.Warn("ntbring: ring failed", "host", d.rank, "err", err)
	if known {
		if d.proto != nil {
			d.proto.failed()
		}
	} else {
		// The store may not know: a stopped host keeps its connection
		// to it. Told, it ends every collective on every host, the
		// barrier of Close included, which would otherwise wait for the
		// lost host for ever, and the launcher learns whom to blame.
		core.ReportLost(d.boot, pl)
		if d.proto != nil {
			d.proto.broken(lost)
		}
	}
	for _, o := range d.pending.takeIf(func(*op) bool { return true }) {
		o.finish(err)
	}
	d.wake()
}

// blame names the host a failure lost (this one, when err names none)
// and the PE the job lost with it (with several PEs per host, the lost
// host's PE on this lane), and err as the job's error.
func (d *domain) blame(err error) (*core.PeerLostError, int, error) {
	lost := d.rank
	var pl *core.PeerLostError
	if errors.As(err, &pl) && pl.PE >= 0 && pl.PE < d.npes {
		lost = pl.PE
	} else {
		pl = &core.PeerLostError{PE: lost, Reason: err.Error()}
	}
	if d.lanes > 1 {
		// The protocol names hosts; the job and the launcher know PEs.
		pl = &core.PeerLostError{PE: d.peAt[lost][d.lane], Reason: fmt.Sprintf("host %d: %s", lost, pl.Reason)}
		err = pl
	}
	return pl, lost, err
}

// fromBootstrap says whether err is the loss the bootstrap reported: it
// names a PE of the job, where the protocol's losses name hosts.
func (d *domain) fromBootstrap(err error) bool {
	known := d.boot.Err()
	return known != nil && errors.Is(err, known)
}

// alarmed acts on doorbell bits db rung by the neighbour from on side: if
// they carry the broken-ring alarm, the domain fails naming the host
// lost (alarm.go).
func (d *domain) alarmed(side ntb.Side, from int, db uint64) {
	lost, ok := alarmLost(db, d.rank, from, d.npes)
	if !ok {
		return
	}
	d.fail(&core.PeerLostError{PE: lost,
		Reason: fmt.Sprintf("the ring is broken (alarm from the %s neighbour, host %d)", side, from)})
}

// dropped records a malformed transfer that was thrown away.
func (d *domain) dropped(err error) {
	d.drops.Add(1)
	d.log.Warn("ntbring: dropped a transfer", "host", d.rank, "err", err)
}

// region is a symmetric region: this host's part of it. Other hosts'
// writes land in it through this host's workers.
type region struct {
	dom  *domain
	idx  int
	size int
	mem  []byte // mapped outside the Go heap; nil for size 0 and after Close
	// release unmaps mem.
	release func() error
	// host is, with several PEs per host, the same region of every PE of
	// this host by index (this PE's is the region itself), as this
	// process maps them: what the lane node lands in and serves for them.
	host []*region
}

func (r *region) Local() []byte {
	if r.dom.closed.Load() {
		return nil
	}
	return r.mem
}

// maxRegions and maxRegionSize are what a transfer's metadata can name:
// an 8-bit region index and a 32-bit offset.
const (
	maxRegions    = 256
	maxRegionSize = math.MaxUint32
)

// regionFor returns region idx of this host's PE dpe (its index on the
// host; this PE's own with one PE per host) if [off, off+n) lies inside
// it, else nil.
func (d *domain) regionFor(dpe, idx uint8, off, n int) *region {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if int(idx) >= len(d.regions) {
		return nil
	}
	r := d.regions[idx]
	if r != nil && int(dpe) != d.lane {
		if int(dpe) >= len(r.host) {
			return nil
		}
		r = r.host[dpe]
	}
	if r == nil || r.mem == nil || !core.InBounds(off, n, r.size) {
		return nil
	}
	return r
}

// NewRegion implements core.Domain.
func (d *domain) NewRegion(size int) (core.Region, error) {
	if d.closed.Load() {
		return nil, d.opErr("new region", core.ErrClosed)
	}
	d.mu.Lock()
	idx := d.nregions
	d.nregions++
	d.mu.Unlock()
	if err := core.AgreeRegion(d.boot, idx, size, maxRegionSize); err != nil {
		return nil, d.opErr("new region", err)
	}
	if d.lanes > 1 {
		return nil, d.opErr("new region", d.errNeedsHost(fmt.Sprintf("region %d", idx)))
	}
	if idx >= maxRegions {
		return nil, d.opErr("new region", fmt.Errorf("region %d: at most %d regions: %w", idx, maxRegions, core.ErrInvalid))
	}
	var err error
	r := &region{dom: d, idx: idx, size: size}
	if size > 0 {
		r.mem, r.release, err = d.regionMemory(idx, size)
	}
	return d.enterRegion("new region", r, err)
}

// enterRegion enters r, whose memory is ready unless err, in the
// domain's regions once every host agrees it is, and releases it
// otherwise.
func (d *domain) enterRegion(op string, r *region, err error) (core.Region, error) {
	idx, size := r.idx, r.size
	// Enter the region before the hosts agree it exists: a host that
	// returns first may target it at once.
	d.mu.Lock()
	if d.closed.Load() {
		err = errors.Join(err, core.ErrClosed)
	} else {
		for len(d.regions) <= idx {
			d.regions = append(d.regions, nil)
		}
		d.regions[idx] = r
	}
	d.mu.Unlock()
	if size > 0 {
		err = core.Agree(d.boot, err)
	}
	if err != nil {
		d.mu.Lock()
		if idx < len(d.regions) {
			d.regions[idx] = nil
		}
		d.mu.Unlock()
		if r.mem != nil {
			err = errors.Join(err, r.release())
		}
		return nil, d.opErr(op, err)
	}
	return r, nil
}

// regionMemory is region idx's memory: the protocol's, if it places
// regions, else a mapping of the domain's own.
func (d *domain) regionMemory(idx, size int) ([]byte, func() error, error) {
	if x, ok := d.proto.(regionExporter); ok {
		m, release, err := x.exportRegion(idx, size)
		if err != nil || m != nil {
			return m, release, err
		}
	}
	m, err := d.mapRegion(idx, size)
	if err != nil {
		return nil, nil, err
	}
	return m, func() error { return sys.Retire(m) }, nil
}

// mapRegion maps a region's memory: a shared mapping of a file that is
// removed at once, so that it lives outside the Go heap, like the memory
// an NT port's window exposes, and nothing of it outlives the process.
func (d *domain) mapRegion(idx, size int) ([]byte, error) {
	path := filepath.Join(d.dir, fmt.Sprintf("ntbring-%s-h%d-r%d", d.id, d.rank, idx))
	m, err := sys.CreateShared(path, size)
	if err != nil {
		return nil, fmt.Errorf("region %d: %w", idx, err)
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("region %d: %w", idx, errors.Join(err, sys.Unmap(m)))
	}
	return m, nil
}

// NewEndpoint implements core.Domain.
func (d *domain) NewEndpoint(core.EndpointOptions) (core.Endpoint, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, d.opErr("new endpoint", core.ErrClosed)
	}
	e := &endpoint{Endpoint: provkit.Endpoint{Provider: Name, NPEs: d.size}, dom: d}
	d.endpoints[e] = struct{}{}
	return e, nil
}

// Barrier implements core.Barrierer with the protocol's own barrier: for
// the seed protocol, the two-round ring barrier on the BARRIER_START and
// BARRIER_END doorbells. Like sync_all it completes nothing; the seeds
// quiet first, as shmem's barrier_all does.
func (d *domain) Barrier() error { return d.BarrierCheck(nil) }

// BarrierCheck implements core.CheckedBarrierer: Barrier, whose wait
// also ends, with check's error, once check returns one. It is consulted
// as a lost peer is, every abortPoll while the barrier sleeps.
func (d *domain) BarrierCheck(check func() error) error {
	if d.closed.Load() {
		return d.opErr("barrier", core.ErrClosed)
	}
	if err := d.err(); err != nil {
		return d.opErr("barrier", err)
	}
	if d.proto == nil {
		return nil
	}
	if d.lanes > 1 {
		// The protocol's barrier joins the PEs of one lane; the job's
		// are every lane's: the bootstrap's barrier, which ends on a
		// lost PE as the ring's does.
		if err := d.boot.Barrier(); err != nil {
			return d.opErr("barrier", err)
		}
		return nil
	}
	abort := d.abort
	if check != nil {
		abort = func() error {
			if err := d.abort(); err != nil {
				return err
			}
			return check()
		}
	}
	if err := d.proto.barrier(abort); err != nil {
		return d.opErr("barrier", err)
	}
	return nil
}

// Close implements core.Domain: it completes every endpoint's operations,
// waits at a barrier until every host has done the same (so nothing is in
// flight to or through this host), stops the protocol and unmaps the
// regions. On a failed ring the barrier ends at once, with the loss fail
// reported to the bootstrap: the lost host may never come.
func (d *domain) Close() error {
	return d.closer.Do(d.close)
}

func (d *domain) close() error {
	d.mu.Lock()
	eps := d.endpoints
	d.endpoints = nil
	d.mu.Unlock()
	var errs []error
	for e := range eps {
		if err := e.Quiet(); err != nil && d.err() == nil {
			errs = append(errs, err)
		}
		e.MarkClosed()
	}
	d.closed.Store(true)
	failed := d.err() != nil
	d.closing.Store(true)
	if err := d.boot.Barrier(); err != nil {
		errs = append(errs, fmt.Errorf("barrier: %w", err))
	} else if failed {
		errs = append(errs, d.err())
	}
	if d.proto != nil {
		errs = append(errs, d.proto.close())
	}
	d.mu.Lock()
	for _, r := range d.regions {
		if r != nil && r.mem != nil {
			errs = append(errs, r.release())
			r.mem = nil
		}
	}
	d.mu.Unlock()
	// Open made the job directory; the last PE out removes it, so a job
	// no launcher cleans up after leaves nothing.
	errs = append(errs, core.LeaveJobDir(d.dir))
	d.wake()
	if err := errors.Join(errs...); err != nil {
		return d.opErr("close", err)
	}
	return nil
}

// wake tells this host's waiters that its memory may have changed. The
// sequence's add is a full barrier between the write that landed and the
// load of the armed count, as a waiter counts itself before it checks its
// condition: one of the two sees the other.
func (d *domain) wake() {
	d.seq.Add(1)
	if d.armed.Load() > 0 {
		d.also.Tell()
	}
	d.change.Notify()
}

// WaitArm implements core.LocalWaiter. Every write another host makes
// lands through this host's workers, which wake the waiters; ranges are
// not tracked, so a wake-up may be for other bytes.
func (d *domain) WaitArm(core.Region, int, int) (uint32, int) {
	d.armed.Add(1)
	return d.seq.Load(), 0
}

// WaitDisarm implements core.LocalWaiter.
func (d *domain) WaitDisarm(int) { d.armed.Add(-1) }

var _ core.WaitNotifier = (*domain)(nil)

var _ core.Relayer = (*domain)(nil)

// Relays implements core.Relayer: every ring node forwards the traffic of
// others round the ring, and with lanes, lands what comes on its lane
// for every PE of its host.
func (d *domain) Relays() bool { return true }

// SetWaitNotify implements core.WaitNotifier: while a waiter is armed,
// every change wake tells its waiters of calls f too.
func (d *domain) SetWaitNotify(f func()) { d.also.Set(f) }

// WaitChange implements core.LocalWaiter: it returns once a remote write
// landed here since seq, or after max.
func (d *domain) WaitChange(seq uint32, max time.Duration) uint32 {
	if max > 0 && !d.closed.Load() {
		_ = d.change.Wait(func() bool { return d.seq.Load() != seq }, max, nil)
	}
	return d.seq.Load()
}
