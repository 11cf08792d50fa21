package loopback

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/providers/provkit"
)

// domain is one PE's membership in a loopback job.
type domain struct {
	rank, npes int
	boot       core.Bootstrap
	dir        string // the job directory, where the files are made
	id         uint64 // the domain's id, PE 0's random number
	prefix     string // id in hex, part of every file name
	spin       int    // GOSHMEM_LOOPBACK_SPIN
	asym       bool   // the job fences asymmetrically (see notify)

	// pw is this PE's wake-up pipe and its peers', where some PE of the
	// domain sleeps in the runtime's poller (GOSHMEM_LOOPBACK_WAKE); nil
	// where every PE sleeps on the futex.
	pw        *pollWake
	pollSleep bool // this PE's waiters sleep on pw, not on the futex
	// busy, where set (SetWaitYield), says that this process has input
	// for its other goroutines: waiters that sleep on pw yield the CPU
	// first while it says no.
	busy func() bool

	// dissemination chooses the barrier (barrier.go): every PE has a CPU
	// of its own. The control file says so too (barMode).
	dissemination bool

	// ctl[pe] is pe's control file as mapped here; self is ours. Set in
	// Open, read-only after.
	ctl  []peerCtl
	self *peerCtl

	closed atomic.Bool
	closer provkit.CloseOnce

	mu        sync.Mutex // guards the fields below
	usedSlots uint32     // bit i set: watch slot i of our control file is in use
	regions   []*region
	nregions  int // regions created so far, successful or not: names them
	endpoints map[*endpoint]struct{}
}

// peerCtl is one PE's control file as mapped in this process, with
// pointers to its shared words (see ctl.go). Those words are touched only
// with sync/atomic: other processes write them.
type peerCtl struct {
	mem        []byte
	waiters    *uint32
	anyWaiters *uint32
	watchMask  *uint64
	seq        *uint32
	sleepers   *uint32
	pollers    *uint32
	watches    []uint64 // watchSlots pairs {lo, hi}

	// The counter barrier's words; only PE 0's are used.
	barCount, barGen, barSleepers *uint32
	// The dissemination barrier's flags, a pair {flag, sleepers} a round,
	// and the count of dissemination barriers its owner passed.
	barFlags [barRounds][2]*uint32
	barEpoch *uint32
}

func newPeerCtl(m []byte) peerCtl {
	c := peerCtl{mem: m, waiters: mem.Word32(m, offWaiters), anyWaiters: mem.Word32(m, offAnyWaiters),
		watchMask: mem.Word64(m, offWatchMask), seq: mem.Word32(m, offSeq), sleepers: mem.Word32(m, offSleepers),
		pollers:  mem.Word32(m, offPollers),
		watches:  mem.Slice[uint64](m[offWatches : offWatches+watchSlots*16]),
		barCount: mem.Word32(m, offBarCount), barGen: mem.Word32(m, offBarGen), barSleepers: mem.Word32(m, offBarSleepers),
		barEpoch: mem.Word32(m, offBarEpoch)}
	for r := range c.barFlags {
		c.barFlags[r] = [2]*uint32{mem.Word32(m, offBarFlags+r*128), mem.Word32(m, offBarFlags+r*128+4)}
	}
	return c
}

// watched reports whether a waiter of this PE watches any byte of the
// encoded range [lo, hi), whose summary bits (pageBits) are in the watch
// summary: a waiter for any change, or one whose slot says so. A slot being
// armed or disarmed as we read may look wider than it is: a spurious wake,
// never a missed one, since the owner publishes a slot, and then the
// summary, before it counts the waiter.
func (c *peerCtl) watched(lo, hi uint64) bool {
	if atomic.LoadUint32(c.anyWaiters) != 0 {
		return true
	}
	for i := 0; i < len(c.watches); i += 2 {
		wh := atomic.LoadUint64(&c.watches[i+1])
		if wh != 0 && lo < wh && atomic.LoadUint64(&c.watches[i]) < hi {
			return true
		}
	}
	return false
}

// yieldFor is how long a waiter yields the CPU, after spinning and before
// it sleeps. A yield costs ~0.2µs and hands the CPU to a runnable PE at
// once, while a futex sleep and wake-up costs tens of microseconds and the
// shortest timed kernel sleep ~50-80µs. With more PEs than CPUs the PE a
// waiter waits for is usually runnable but not running, so yielding for
// the length of a collective's round lets it run at once; waits longer
// than that sleep, so an idle PE does not keep a CPU busy.
const yieldFor = 200 * time.Microsecond

var (
	_ core.Domain       = (*domain)(nil)
	_ core.DirectAccess = (*domain)(nil)
	_ core.LocalWaiter  = (*domain)(nil)
)

func (d *domain) Rank() int { return d.rank }
func (d *domain) Size() int { return d.npes }

func (d *domain) opErr(op string, err error) error { return provkit.Err(Name, op, -1, err) }

// path names a file of pe in the job directory: "pe<rank>-<domain id>.<what>".
func (d *domain) path(pe int, what string) string {
	return filepath.Join(d.dir, fmt.Sprintf("pe%d-%s.%s", pe, d.prefix, what))
}

// share makes one file of size bytes per PE visible to every PE, in three
// collective steps, each ended by core.Agree: every PE creates and fills
// its own file; every PE maps everybody else's and checks it; every PE
// removes its own name. The last step runs on failure too (every PE takes
// the same branch, since Agree told them all the same), so that once any
// PE returns, no PE's file is left in the directory. On error nothing of
// it stays mapped either.
func (d *domain) share(what, suffix string, size int, fill func([]byte), check func(pe int, m []byte) error) ([][]byte, error) {
	create := func(path string) ([]byte, error) {
		m, err := sys.CreateShared(path, size)
		if err == nil && fill != nil {
			fill(m)
		}
		return m, err
	}
	return d.shareWith(what, suffix, size, create, check, sys.Unmap)
}

// shareWith is share with this PE's own mapping made by create from the
// file's path, and released by release if the sharing fails: for a
// registered region, create moves the program's memory onto the file and
// release gives it back (sys.Unshare) instead of unmapping it.
func (d *domain) shareWith(what, suffix string, size int, create func(path string) ([]byte, error),
	check func(pe int, m []byte) error, release func([]byte) error) ([][]byte, error) {
	maps := make([][]byte, d.npes)
	own := d.path(d.rank, suffix)
	m, err := create(own)
	created := err == nil
	if created {
		maps[d.rank] = m
	} else {
		err = fmt.Errorf("create %s: %w", what, d.noMemory(err))
	}
	err = core.Agree(d.boot, err)

	if err == nil {
		for pe := range maps {
			if pe == d.rank {
				continue
			}
			m, err = sys.OpenShared(d.path(pe, suffix), size)
			if err == nil {
				maps[pe] = m
				if check != nil {
					err = check(pe, m)
				}
			}
			if err != nil {
				err = fmt.Errorf("map %s of PE %d: %w", what, pe, d.noMemory(err))
				break
			}
		}
		err = core.Agree(d.boot, err)
	}

	// After that barrier nobody opens our file any more, whatever happened.
	var rmErr error
	if created {
		rmErr = os.Remove(own)
	}
	if err = errors.Join(err, core.Agree(d.boot, rmErr)); err != nil {
		ownErr := release(maps[d.rank])
		maps[d.rank] = nil
		return nil, errors.Join(err, ownErr, unmapAll(maps))
	}
	return maps, nil
}

// noMemory marks running out of shared memory as core.ErrNoMemory, and
// says where the space ran out: a full /dev/shm is the usual cause.
func (d *domain) noMemory(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w (the file system of %s is full; %s chooses another): %w",
			err, filepath.Dir(d.dir), core.EnvShmDir, core.ErrNoMemory)
	case errors.Is(err, syscall.ENOMEM):
		return fmt.Errorf("%w: %w", err, core.ErrNoMemory)
	}
	return err
}

func unmapAll(maps [][]byte) error {
	var errs []error
	for i, m := range maps {
		errs = append(errs, sys.Unmap(m))
		maps[i] = nil
	}
	return errors.Join(errs...)
}

// region is a symmetric region: every PE's part, as mapped here.
type region struct {
	dom   *domain
	idx   int // order of creation, the same on every PE
	size  int
	peers [][]byte // peers[pe]; nil for a region of size 0 and after Close
	// registered: our part is the program's memory (RegisterRegion),
	// moved onto our file in place; it is given back, never unmapped.
	registered bool
	// backing is our file of a reserved region (NewReservedRegion), kept
	// open for Commit; nil for any other region.
	backing *sys.Backing
}

// release lets go of every PE's part as mapped here: our own part of a
// registered region becomes private memory with its contents again, the
// rest is retired (sys.Retire), since the program may hold slices of it.
func (r *region) release() error {
	var errs []error
	if r.backing != nil {
		errs = append(errs, r.backing.Close())
	}
	for pe, m := range r.peers {
		switch {
		case len(m) == 0:
		case pe == r.dom.rank && r.registered:
			errs = append(errs, sys.Unshare(m))
		default:
			errs = append(errs, sys.Retire(m))
		}
		r.peers[pe] = nil
	}
	return errors.Join(errs...)
}

func (r *region) Local() []byte {
	if r.dom.closed.Load() {
		return nil
	}
	return r.peers[r.dom.rank]
}

// NewRegion implements core.Domain. A region of size 0 has no files.
func (d *domain) NewRegion(size int) (core.Region, error) {
	return d.newRegion("new region", size, false)
}

var _ core.Committer = (*domain)(nil)

// NewReservedRegion implements core.Committer: NewRegion with files whose
// blocks are allocated only as Commit asks. Every PE first looks at
// whether the file system of the job directory has room for every PE's
// part now, and all fail alike if not.
func (d *domain) NewReservedRegion(size int) (core.Region, error) {
	return d.newRegion("new reserved region", size, true)
}

func (d *domain) newRegion(op string, size int, reserve bool) (core.Region, error) {
	if d.closed.Load() {
		return nil, d.opErr(op, core.ErrClosed)
	}
	d.mu.Lock()
	idx := d.nregions
	d.nregions++
	d.mu.Unlock()

	// Before the sizes are exchanged, so before any PE has made its file:
	// every PE sees the room the job's files have left alone.
	var roomErr error
	if reserve && size > 0 {
		roomErr = d.checkRoom(idx, size)
	}
	// Every PE learns every PE's size, so a disagreement is the same error
	// everywhere without another round.
	if err := core.AgreeRegion(d.boot, idx, size, 1<<watchOffBits-1); err != nil {
		return nil, d.opErr(op, err)
	}
	if idx > watchRegionMax {
		return nil, d.opErr(op, fmt.Errorf("region %d of %d bytes: at most %d regions of under %d bytes: %w",
			idx, size, watchRegionMax+1, 1<<watchOffBits, core.ErrInvalid))
	}
	if reserve && size > 0 {
		if err := core.Agree(d.boot, roomErr); err != nil {
			return nil, d.opErr(op, err)
		}
	}
	r := &region{dom: d, idx: idx, size: size, peers: make([][]byte, d.npes)}
	if size > 0 {
		what, suffix := fmt.Sprintf("region %d", idx), fmt.Sprintf("r%d", idx)
		var maps [][]byte
		var err error
		if reserve {
			create := func(path string) ([]byte, error) {
				m, b, err := sys.ReserveShared(path, size)
				r.backing = b
				return m, err
			}
			release := func(m []byte) error {
				if r.backing == nil {
					return nil // never made
				}
				err := errors.Join(r.backing.Close(), sys.Unmap(m))
				r.backing = nil
				return err
			}
			maps, err = d.shareWith(what, suffix, size, create, nil, release)
		} else {
			maps, err = d.share(what, suffix, size, nil, nil)
		}
		if err != nil {
			return nil, d.opErr(op, err)
		}
		r.peers = maps
	}
	return d.enter(op, r)
}

// checkRoom refuses region idx of size bytes a PE when the file system
// of the job directory has not room for every PE's part of it now: the
// region could never be committed whole, and a job that asks for more
// than its host holds is told at the start, as when every part was
// allocated whole. A file system that does not say (or sets no limit,
// as a tmpfs of size 0) is taken at its word.
func (d *domain) checkRoom(idx, size int) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.dir, &st); err != nil || st.Blocks == 0 {
		return nil
	}
	page := int64(os.Getpagesize())
	need := ((int64(size) + page - 1) &^ (page - 1)) * int64(d.npes)
	if room := int64(st.Bavail) * int64(st.Bsize); need > room {
		return fmt.Errorf("region %d of %d bytes for each of %d PEs needs %s of %s, which has %s free of %s (%s chooses another): %w",
			idx, size, d.npes, core.FormatSize(need), filepath.Dir(d.dir), core.FormatSize(room),
			core.FormatSize(int64(st.Blocks)*int64(st.Bsize)), core.EnvShmDir, core.ErrNoMemory)
	}
	return nil
}

// Commit implements core.Committer: it allocates the blocks of this PE's
// file of r under the range (fallocate, page by page as the kernel
// does; pages allocated already cost nothing). A region from NewRegion
// is allocated whole already, and a registered one is the program's own
// memory made shared, allocated whole too.
func (d *domain) Commit(r core.Region, off, n int) error {
	const op = "commit"
	reg, ok := r.(*region)
	switch {
	case d.closed.Load():
		return d.opErr(op, core.ErrClosed)
	case !ok || reg.dom != d:
		return d.opErr(op, fmt.Errorf("region %T is not one of this domain's: %w", r, core.ErrInvalid))
	}
	if err := core.CheckBounds(off, n, reg.size); err != nil {
		return d.opErr(op, fmt.Errorf("region %d: %w", reg.idx, err))
	}
	if n == 0 || reg.backing == nil {
		return nil
	}
	if err := reg.backing.Commit(off, n); err != nil {
		return d.opErr(op, fmt.Errorf("region %d, %d bytes at %d: %w", reg.idx, n, off, d.noMemory(err)))
	}
	return nil
}

// enter adds a new region to the domain's, unless it closed meanwhile.
func (d *domain) enter(op string, r *region) (core.Region, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		// Closed while we were busy: a misuse, but leave nothing mapped.
		return nil, d.opErr(op, errors.Join(core.ErrClosed, r.release()))
	}
	d.regions = append(d.regions, r)
	return r, nil
}

// RegisterRegion implements core.Domain: mem, the program's memory, moves
// in place onto this PE's file of the region (sys.ShareInPlace: same
// address, same contents), which the peers then map as they map a heap
// region's. From there on the region is like any other, until Close
// gives mem back as private memory holding what it held.
func (d *domain) RegisterRegion(mem []byte) (core.Region, error) {
	const op = "register region"
	if d.closed.Load() {
		return nil, d.opErr(op, core.ErrClosed)
	}
	d.mu.Lock()
	idx := d.nregions
	d.nregions++
	d.mu.Unlock()
	if err := core.AgreeRegister(d.boot, idx, mem, 1<<watchOffBits-1); err != nil {
		return nil, d.opErr(op, err)
	}
	if idx > watchRegionMax {
		return nil, d.opErr(op, fmt.Errorf("region %d: at most %d regions: %w", idx, watchRegionMax+1, core.ErrInvalid))
	}
	r := &region{dom: d, idx: idx, size: len(mem), peers: make([][]byte, d.npes), registered: true}
	if len(mem) > 0 {
		create := func(path string) ([]byte, error) { return mem, sys.ShareInPlace(path, mem) }
		maps, err := d.shareWith(fmt.Sprintf("region %d", idx), fmt.Sprintf("r%d", idx), len(mem), create, nil, sys.Unshare)
		if err != nil {
			return nil, d.opErr(op, err)
		}
		r.peers = maps
	}
	return d.enter(op, r)
}

// NewEndpoint implements core.Domain.
func (d *domain) NewEndpoint(opts core.EndpointOptions) (core.Endpoint, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, d.opErr("new endpoint", core.ErrClosed)
	}
	// Of the options, only one goroutine at a time matters: it lets
	// atomics, and where the job fences asymmetrically every operation,
	// count without an atomic add. NoStore changes nothing.
	serial := opts.Serialized || opts.Private
	e := &endpoint{Endpoint: provkit.Endpoint{Provider: Name, NPEs: d.npes}, dom: d, serial: serial, plain: serial && d.asym}
	d.endpoints[e] = struct{}{}
	return e, nil
}

// PeerBytes implements core.DirectAccess: pe's part of r as mapped in this
// process. Loads and stores through it are RMA without the endpoint.
func (d *domain) PeerBytes(pe int, r core.Region) []byte {
	reg, ok := r.(*region)
	if !ok || reg.dom != d || d.closed.Load() || core.CheckPE(pe, d.npes) != nil {
		return nil
	}
	return reg.peers[pe]
}

// WaitArm implements core.LocalWaiter. It publishes the watched range in
// a free slot of this PE's control file, or counts an any-change waiter
// when there is no range or no free slot, and only then counts the waiter:
// a writer that sees the count sees the slot. The count's increment is an
// atomic read-modify-write, so it is ordered before the caller's next check
// of its condition: a PE that changes that memory afterwards is sure to
// see the waiter (see notify).
func (d *domain) WaitArm(r core.Region, off, n int) (uint32, int) {
	if d.closed.Load() {
		return 0, -1
	}
	slot := -1
	d.mu.Lock()
	if reg, ok := r.(*region); ok && reg.dom == d && n > 0 && off >= 0 && off <= reg.size-n {
		if free := ^d.usedSlots & (1<<watchSlots - 1); free != 0 {
			slot = bits.TrailingZeros32(free)
			d.usedSlots |= 1 << slot
			atomic.StoreUint64(&d.self.watches[2*slot], watchKey(reg.idx, off))
			atomic.StoreUint64(&d.self.watches[2*slot+1], watchKey(reg.idx, off+n))
		}
	}
	if slot < 0 {
		atomic.AddUint32(d.self.anyWaiters, 1)
	}
	d.summarize()
	d.mu.Unlock()
	atomic.AddUint32(d.self.waiters, 1)
	return atomic.LoadUint32(d.self.seq), slot
}

// WaitDisarm implements core.LocalWaiter.
func (d *domain) WaitDisarm(slot int) {
	if d.closed.Load() {
		return
	}
	atomic.AddUint32(d.self.waiters, ^uint32(0))
	d.mu.Lock()
	if slot < 0 {
		atomic.AddUint32(d.self.anyWaiters, ^uint32(0))
	} else {
		atomic.StoreUint64(&d.self.watches[2*slot+1], 0)
		atomic.StoreUint64(&d.self.watches[2*slot], 0)
		d.usedSlots &^= 1 << slot
	}
	d.summarize()
	d.mu.Unlock()
}

// summarize rewrites this PE's watch summary from its slots in use: every
// bit while a waiter waits for any change. The caller holds mu, so the
// summary changes with the slots; a writer that read the old one wakes a
// waiter spuriously at worst.
func (d *domain) summarize() {
	mask := ^uint64(0)
	if atomic.LoadUint32(d.self.anyWaiters) == 0 {
		mask = 0
		for used := d.usedSlots; used != 0; used &= used - 1 {
			i := bits.TrailingZeros32(used)
			mask |= pageBits(atomic.LoadUint64(&d.self.watches[2*i]), atomic.LoadUint64(&d.self.watches[2*i+1]))
		}
	}
	atomic.StoreUint64(d.self.watchMask, mask)
}

// seq counts wake-ups in steps of seqStep, so WaitChange's own answers can
// carry settled in the low bit: "this waiter has spun, yielded and, where
// the job fences asymmetrically, run the global barrier, and the caller has
// re-checked its condition since; sleep now". A sleep that sees no change
// keeps the mark: while the waiter stays armed, every write after its
// barrier sees its count, so it need not spin, yield or fence again. A PE
// idle in a long wait then sleeps slice after slice, instead of taking a
// CPU's worth of yields and interrupting every PE with a barrier each
// slice.
const (
	seqStep = 2
	settled = 1
)

// WaitChange implements core.LocalWaiter: it returns once this PE's seq
// differs from seq, or after about max. It does not spin: its caller has
// spun on its own condition as the job's core.Waiting says. It yields the
// CPU for a while (cheap, and lets the PE we wait for run if it shares
// our core), then sleeps on a futex until a waker or max. max <= 0 means
// do not sleep.
//
// Where the job fences asymmetrically (see notify), a writer may have
// stored the data and missed our count of waiters, so before the first
// sleep WaitChange issues the global barrier and returns at once, with
// seq marked settled: the caller re-checks its condition, sees any such
// store, and the next call, given the marked seq, sleeps straight away.
func (d *domain) WaitChange(seq uint32, max time.Duration) uint32 {
	if d.closed.Load() {
		return seq
	}
	p := d.self.seq
	if seq&settled != 0 {
		if max <= 0 {
			return atomic.LoadUint32(p)
		}
		return d.sleep(seq, max)
	}
	// Sleeping in the poller, do not yield as yield does: with one
	// runtime processor the Gosched loop keeps the scheduler from the
	// poller (wake.go). Yield the CPU alone, while busy says that no
	// input waits for the poller (yieldIdle).
	if !d.pollSleep {
		if v := d.yield(p, seq); v != seq {
			return v
		}
	} else if d.busy != nil && max > 0 && domainsHere.Load() == 1 {
		if v := d.yieldIdle(p, seq); v != seq {
			return v
		}
	}
	if max <= 0 {
		return atomic.LoadUint32(p)
	}
	if d.asym {
		// Registered in Open, so it does not fail; were it to, a missed
		// store would still be seen within max.
		_ = sys.GlobalBarrier()
		if v := atomic.LoadUint32(p); v != seq {
			return v
		}
		return seq | settled
	}
	return d.sleep(seq, max)
}

// poll returns *p as soon as it differs from old, or old once it has spun
// d.spin times and then yielded the CPU for yieldFor without a change.
func (d *domain) poll(p *uint32, old uint32) uint32 {
	for range d.spin {
		if v := atomic.LoadUint32(p); v != old {
			return v
		}
	}
	return d.yield(p, old)
}

// yield is poll without the spin, for WaitChange, whose caller has spun
// already (see core.Waiting).
func (d *domain) yield(p *uint32, old uint32) uint32 {
	shared := domainsHere.Load() > 1
	for start := time.Now(); time.Since(start) < yieldFor; {
		// Gosched lets a PE that is a goroutine of this process run;
		// sched_yield lets a PE that is another process run. A PE alone
		// in its process needs no goroutine of it to run, and on a
		// goroutine locked to its thread (a C program's caller) Gosched
		// hands the runtime processor to another thread and back, two
		// thread switches a look.
		if shared {
			runtime.Gosched()
		}
		sys.YieldHeld()
		if v := atomic.LoadUint32(p); v != old {
			return v
		}
	}
	return old
}

// yieldIdle returns *p as soon as it differs from old, or old once it
// has yielded the CPU for yieldFor, or once d.busy says that input waits
// for this process's goroutines, which the caller then sleeps in the
// poller to let run. It yields with sched_yield alone, keeping the
// runtime processor: nothing this process runs is needed for *p to move
// while busy says no and this PE is the process's only one
// (domainsHere). A waiter that sleeps costs its waker a wake-up,
// which took 30-36 µs here where the waiter's CPU had gone idle; one that
// yields sees the store at its next look, and its waker wakes nobody.
//
// Over tcp on posed hosts, 2 x 2 at GOMAXPROCS=1, with shmem's released
// PEs yielding too, three rounds (µs): barrier 37.86-48.09 against
// 92.26-102.57 sleeping at once, 8-byte sum-reduce 39.73-42.18 against
// 72.75-93.50. Without a look at the input, every waiter yielding
// starved the reader goroutine of a leader that waited for another
// host's partial (docs/measuring.md, "Waits on a shared host").
func (d *domain) yieldIdle(p *uint32, old uint32) uint32 {
	for start := time.Now(); time.Since(start) < yieldFor && !d.busy(); {
		sys.YieldHeld()
		if v := atomic.LoadUint32(p); v != old {
			return v
		}
	}
	return old
}

// domainsHere counts the domains open in this process. Where there are
// several (PEs run as goroutines of one process, as tests run them), a
// waiter does not yield while holding the runtime processor, which the
// other PEs' goroutines may need (yieldIdle).
var domainsHere atomic.Int32

var _ core.WaitYielder = (*domain)(nil)

// SetWaitYield implements core.WaitYielder. Only waiters that sleep in
// the poller (GOSHMEM_LOOPBACK_WAKE) use it; the others yield as yield
// does.
func (d *domain) SetWaitYield(busy func() bool) { d.busy = busy }

// sleep waits on the futex while seq, without its mark, is current, for
// at most max; it returns the new seq, or seq marked settled if there is
// none.
func (d *domain) sleep(seq uint32, max time.Duration) uint32 {
	old := seq &^ settled
	v, ok := uint32(0), false
	if d.pollSleep {
		v, ok = d.pw.sleep(d.self.seq, d.self.pollers, old, max)
	}
	if !ok {
		v = futexSleep(d.self.seq, d.self.sleepers, old, max)
	}
	if v != old {
		return v
	}
	return old | settled
}

// futexSleep sleeps on word while it holds old, for at most max, counted
// in sleepers, and returns the word's value after. The sleep is announced
// before the futex compares the word: a waker changes the word and then
// loads sleepers, both atomically, so either it sees the sleeper and wakes
// it or the kernel sees the new value and does not sleep. Every waker
// changes the word first, so a return with the word unchanged before max
// is spurious (a signal, such as the runtime's preemption signal, cut the
// wait short): it sleeps again for what is left.
func futexSleep(word, sleepers *uint32, old uint32, max time.Duration) uint32 {
	atomic.AddUint32(sleepers, 1)
	defer atomic.AddUint32(sleepers, ^uint32(0))
	deadline := time.Now().Add(max)
	for {
		_ = sys.FutexWait(word, old, max) // woken, timed out or stale: looked at below
		v := atomic.LoadUint32(word)
		if max = time.Until(deadline); v != old || max <= 0 {
			return v
		}
	}
}

// notify is called after n bytes landed at off in pe's part of r. While pe
// has no armed waiter it is one atomic load of a line that stays in every
// cache; while it has, a look at its watch summary and, if that may match,
// a scan of its watch slots, so that only writes to watched bytes wake it:
// a PE waiting in a barrier is not woken by every put of a bulk transfer
// into its heap.
//
// It is a Dekker handshake: the waiter publishes its watch, increments
// waiters (an atomic read-modify-write) and then reads the data; the writer
// stores the data and then reads waiters and the watches. Were the writer's
// load allowed to pass its own earlier store (store-load reordering, which
// x86's store buffer does and weaker machines too), both could read the old
// values, and the waiter would sleep until the max it gave WaitChange.
// Something must forbid that, on one side or the other:
//
//   - Symmetric (GOSHMEM_LOOPBACK_FENCE=atomic, or where membarrier or
//     ordered stores are missing): the endpoint's per-operation atomic add
//     (for an atomic, the operation itself) sits between the store and
//     this load.
//   - Asymmetric (d.asym): puts on an endpoint of one goroutine have no
//     fence, and a waiter, before it sleeps, runs sys.GlobalBarrier, a
//     full barrier on every CPU running a PE of the job, and re-checks its
//     condition (see WaitChange). A writer interrupted after its store
//     has the data visible to that re-check; one interrupted before it
//     loads waiters after the barrier, so sees the count published before
//     it, and wakes the waiter. Waiters that spin or yield pay nothing;
//     a store that raced with their arming and went unnoticed is seen at
//     that barrier, after the spin and yields, instead of at once.
//
// Either way no endpoint operation misses a sleeping waiter. Stores that
// bypass endpoints (through PeerBytes, or by the target's own goroutines)
// do not notify at all; their waiters notice them within max, as
// LocalWaiter's contract allows.
func (d *domain) notify(pe int, r *region, off, n int) {
	if atomic.LoadUint32(d.ctl[pe].waiters) != 0 {
		d.notifyWatched(pe, r, off, n)
	}
}

// notifyWatched is notify once pe has a waiter; kept apart so that notify
// inlines into every operation. The watch summary tells most writes that
// nobody watches them; the others scan the slots.
func (d *domain) notifyWatched(pe int, r *region, off, n int) {
	c := &d.ctl[pe]
	lo, hi := watchKey(r.idx, off), watchKey(r.idx, off+n)
	if atomic.LoadUint64(c.watchMask)&pageBits(lo, hi) != 0 && c.watched(lo, hi) {
		d.wake(pe)
	}
}

// wake bumps pe's seq, ending its waiters' spins, and enters the kernel
// only if one of them sleeps there: on the futex, or in its poller.
func (d *domain) wake(pe int) {
	c := &d.ctl[pe]
	atomic.AddUint32(c.seq, seqStep)
	if atomic.LoadUint32(c.sleepers) != 0 {
		_, _ = sys.FutexWake(c.seq, sys.WakeAll) // cannot fail on a word we have mapped
	}
	if d.pw != nil && !d.closed.Load() { // Close closes the pipes
		d.pw.poke(c, pe)
	}
}

var _ core.WaitPoker = (*domain)(nil)

// WaitPoke implements core.WaitPoker: it wakes this PE's waiters as a
// write by a PE of this host to bytes they watch would.
func (d *domain) WaitPoke() {
	if !d.closed.Load() {
		d.wake(d.rank)
	}
}

// Close implements core.Domain. It marks the domain and its endpoints
// closed, so later calls fail with ErrClosed instead of touching unmapped
// memory; waits at a barrier until every PE is done with the job's memory;
// then unmaps everything. Unmapping here affects only this process's
// views: a peer that is still running keeps its own mappings.
func (d *domain) Close() error {
	return d.closer.Do(d.close)
}

func (d *domain) close() error {
	d.mu.Lock()
	d.closed.Store(true)
	domainsHere.Add(-1)
	for e := range d.endpoints {
		e.MarkClosed()
	}
	d.endpoints = nil
	regions := d.regions
	d.regions = nil
	d.mu.Unlock()

	var errs []error
	if err := d.boot.Barrier(); err != nil {
		errs = append(errs, fmt.Errorf("barrier: %w", err))
	}
	for _, r := range regions {
		errs = append(errs, r.release())
	}
	// d.ctl keeps its slices, as a program may keep its regions': every
	// path to them checks closed first, and one that checked just before
	// finds retired memory, never a hole.
	for i := range d.ctl {
		errs = append(errs, sys.Retire(d.ctl[i].mem))
	}
	if d.pw != nil {
		errs = append(errs, d.pw.close())
	}
	// Open made the job directory; the last PE out removes it, so a job
	// no launcher cleans up after leaves nothing.
	errs = append(errs, core.LeaveJobDir(d.dir))
	if err := errors.Join(errs...); err != nil {
		return d.opErr("close", err)
	}
	return nil
}
