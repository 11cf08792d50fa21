package shmem

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/version"
)

// Version is the OpenSHMEM specification version this package implements.
const (
	MajorVersion = 1
	MinorVersion = 6
	VendorString = "goshmem"
)

// World is one PE's handle on an OpenSHMEM job: what shmem_init sets up in
// C. Several Worlds may live in one process (tests run PEs as goroutines),
// so nothing in this package is global but a count of them (worldsHere).
// A World is also the default context: pass it wherever a Ctx is asked
// for.
//
// Methods of World are safe for concurrent use, except that collective
// operations (Malloc, Free, BarrierAll, SyncAll, Finalize) must be called by
// one goroutine at a time, in the same order on every PE, as the spec says.
type World struct {
	me, npes int
	boot     core.Bootstrap
	launch   string // the launcher and its interface (bootstrap.Job.Describe)
	provider core.Provider
	info     core.Info
	dom      core.Domain
	heap     core.Region
	local    []byte // heap.Local(): this PE's heap, internal area first
	base     uintptr
	waiter   core.LocalWaiter  // nil if the provider cannot block a waiter
	direct   core.DirectAccess // nil if peers' heaps are not mapped here
	failer   core.Failer       // nil if the provider reports no failures of its own
	spins    int               // how often a waiter polls before arming the waiter

	// reportAfter is how long a wait lasts before it is reported (0:
	// never), and reportOut where (doing.go).
	reportAfter time.Duration
	reportOut   io.Writer
	slice       time.Duration // the longest sleep of a waiter (waitSlice, lockedWaitSlice)
	heapSize    int           // user part, as SHMEM_SYMMETRIC_SIZE says
	segs        segments      // registered static data (static.go)
	segMu       sync.Mutex    // serialises RegisterStatic's updates of segs
	log         *slog.Logger
	lookup      func(string) (string, bool) // the job's environment (WithEnv)

	// committer commits each block of a reserved heap as the allocator
	// hands it out; nil where the heap is committed whole (the provider
	// is no core.Committer). shmDir is where its memory comes from, for
	// errors: the job's shared-memory directory.
	committer  core.Committer
	shmDir     string
	commitHook func(off, n int) error // tests: fails commits in the provider's place

	// hostYield bounds waitHostGE's yields: hostYieldFor, or 0 where the
	// system cannot yield or this PE's process relays others' operations
	// (core.Relayer).
	hostYield time.Duration

	def Context // the default context

	thread ThreadLevel // as Init was asked for
	prof   pcontrolState

	allocMu sync.Mutex
	alloc   allocator

	coll collectives
	syn  syncState // point-to-point sync, locks, global exit

	ctxMu    sync.Mutex
	contexts map[*Context]struct{}

	// inits counts the Inits this World answers that no Finalize has
	// balanced yet (see Init); the last Finalize ends it.
	initMu  sync.Mutex
	inits   int
	finOnce sync.Once
	finErr  error
	closed  chan struct{}
}

// jobWorld is the World Init joined from the environment (without
// WithBootstrap), while it is initialized: a later Init in this process
// returns it, counted. jobInit serialises those Inits, so two goroutines
// that call Init at once join the job once.
var (
	jobWorld atomic.Pointer[World]
	jobInit  sync.Mutex
)

// again counts one more Init of w and reports whether w was still
// initialized to take it.
func (w *World) again() bool {
	w.initMu.Lock()
	defer w.initMu.Unlock()
	if w.inits == 0 {
		return false
	}
	w.inits++
	return true
}

// InitCount is how many Inits returned w that no Finalize has balanced
// yet: 0 once w is finalized.
func (w *World) InitCount() int {
	w.initMu.Lock()
	defer w.initMu.Unlock()
	return w.inits
}

// Initialized reports whether w is initialized: from Init until the
// Finalize that balances the last Init it answered
// (shmem_query_initialized).
func (w *World) Initialized() bool {
	w.initMu.Lock()
	defer w.initMu.Unlock()
	return w.inits > 0
}

// Initialized reports whether this process has joined its job and not yet
// left it: whether a World that Init joined from the environment (without
// WithBootstrap) is initialized (shmem_query_initialized). It may be
// called at any time, before Init and after Finalize included.
func Initialized() bool {
	w := jobWorld.Load()
	return w != nil && w.Initialized()
}

// Option configures Init.
type Option func(*options)

type options struct {
	boot     core.Bootstrap
	jobID    string
	secret   []byte
	provider *string
	heapSize int64
	env      func(string) (string, bool)
	log      *slog.Logger
	hostID   string
	thread   ThreadLevel // zero: ThreadMultiple
	locked   bool        // WithLockedCallers

	static   [][]byte         // WithStaticData
	program  *fingerprint     // tests pose as another program
	hostMap  []int            // tests pose as PEs on these hosts, for the collectives only
	exitHook func(status int) // GlobalExit's last step; nil: leave the process

	commit func(off, n int) error // tests: a commit of the heap's memory that fails

	reportAfter *time.Duration // WithWaitReport
	reportOut   io.Writer
}

// WithWaitReport makes a wait that lasts after (0: none) say where it
// waits and what the PEs it waits for are doing, once, on out (standard
// error if nil), in place of GOSHMEM_WAIT_REPORT.
func WithWaitReport(after time.Duration, out io.Writer) Option {
	return func(o *options) { o.reportAfter, o.reportOut = &after, out }
}

// WithBootstrap runs the PE in an existing job instead of one taken from
// the environment; tests use it with bootstrap.NewLocal to run PEs as
// goroutines. jobID must be the same on every PE and unique among running
// jobs. Finalize closes b.
func WithBootstrap(b core.Bootstrap, jobID string) Option {
	return func(o *options) { o.boot, o.jobID = b, jobID }
}

// WithProvider overrides GOSHMEM_PROVIDER (same syntax).
func WithProvider(spec string) Option { return func(o *options) { o.provider = &spec } }

// WithHeapSize overrides SHMEM_SYMMETRIC_SIZE.
func WithHeapSize(bytes int64) Option { return func(o *options) { o.heapSize = bytes } }

// WithEnv makes the PE read its environment through lookup instead of the
// process environment.
func WithEnv(lookup func(string) (string, bool)) Option { return func(o *options) { o.env = lookup } }

// WithLogger sends debug and warning messages to l.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithLockedCallers says that the program calls the library on goroutines
// locked to their OS threads, as a C program's calls through cgo are, so
// that the provider waits on the caller's thread where it would otherwise
// park it (core.Config.LockedCallers).
func WithLockedCallers() Option { return func(o *options) { o.locked = true } }

// WithHostID poses as running on the named host, for tests of locality.
func WithHostID(id string) Option { return func(o *options) { o.hostID = id } }

// bootstrapTimeout bounds how long a PE waits for the job's store to answer
// while connecting; under srun, rank 0 may start late.
const bootstrapTimeout = 60 * time.Second

// Init joins the job this process was launched into (oshrun, srun, mpirun)
// or, when it was not launched, runs it as a job of one PE. It is
// collective.
//
// As OpenSHMEM 1.6 allows of shmem_init, a program may call Init more than
// once: while the World an earlier Init joined from the environment is
// initialized, Init returns that World again and counts the call, without
// applying its options; Finalize then ends the World at the call that
// balances the first Init (see Initialized). With WithBootstrap, every
// Init is a PE of its own, ended by its first Finalize.
func Init(opts ...Option) (*World, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.boot == nil {
		jobInit.Lock()
		defer jobInit.Unlock()
		if w := jobWorld.Load(); w != nil && w.again() {
			return w, nil
		}
	}
	if err := o.thread.check(); err != nil {
		return nil, fmt.Errorf("shmem: init: %w", err)
	}
	lookup := o.env
	if lookup == nil {
		lookup = os.LookupEnv
	}
	heapSize := int64(o.heapSize)
	if heapSize == 0 {
		n, err := symmetricSizeParam.Size(lookup, MinHeapSize, MaxHeapSize)
		if err != nil {
			return nil, fmt.Errorf("shmem: init: %w", err)
		}
		heapSize = n
	}
	var flags [3]bool
	for i, p := range []core.Param{core.DebugParam, infoParam, versionParam} {
		b, err := p.Bool(lookup)
		if err != nil {
			return nil, fmt.Errorf("shmem: init: %w", err)
		}
		flags[i] = b
	}
	debug, info, version := flags[0], flags[1], flags[2]
	if o.reportAfter == nil {
		d, err := waitReportParam.Duration(lookup, 0, core.MaxDuration)
		if err != nil {
			return nil, fmt.Errorf("shmem: init: %w", err)
		}
		o.reportAfter = &d
	}
	log := o.log
	if log == nil {
		level := slog.LevelWarn
		if debug {
			level = slog.LevelDebug
		}
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	spec, _ := core.ProviderParam.Lookup(lookup)
	if o.provider != nil {
		spec = *o.provider
	}

	boot, jobID, secret := o.boot, o.jobID, o.secret
	exitDir := "" // where the launcher looks for a global exit
	launch := ""  // the launcher and its interface, for SHMEM_INFO
	if boot == nil {
		job, launched, err := bootstrap.JobFromEnv(lookup)
		if err != nil {
			return nil, fmt.Errorf("shmem: init: %w", err)
		}
		if launched {
			b, err := bootstrap.Connect(job, bootstrapTimeout)
			if err != nil {
				return nil, fmt.Errorf("shmem: init: joining job %s: %w", job.JobID, err)
			}
			boot, jobID, secret = b, job.JobID, job.Secret
			exitDir = core.JobDir(lookup, job.JobID)
		} else {
			boot, jobID = bootstrap.NewLocal(1)[0], singletonJobID()
		}
		launch = job.Describe()
	}
	log = log.With("pe", boot.Rank())

	w, err := open(boot, jobID, secret, spec, int(heapSize), lookup, log, &o)
	if err != nil {
		boot.Close()
		return nil, fmt.Errorf("shmem: init: %w", err)
	}
	worldsHere.Add(1)
	w.syn.exit = exitState{hook: o.exitHook, jobDir: exitDir}
	w.launch = launch
	for _, m := range o.static {
		if err := w.RegisterStatic(m); err != nil {
			return nil, fmt.Errorf("shmem: init: %w", errors.Join(err, w.Finalize()))
		}
	}
	if w.me == 0 && (info || version) {
		w.printInfo(os.Stderr, info, lookup)
	}
	if o.boot == nil {
		jobWorld.Store(w)
	}
	log.Debug("initialized", "provider", w.provider.Name(), "npes", w.npes, "heap", core.FormatSize(int64(w.heapSize)))
	return w, nil
}

func open(boot core.Bootstrap, jobID string, secret []byte, spec string, heapSize int,
	lookup func(string) (string, bool), log *slog.Logger, o *options) (*World, error) {
	// Every PE must ask for the same heap and run the same program, else
	// they would address each other's memory at the wrong offsets.
	prog := programFingerprint()
	if o.program != nil {
		prog = *o.program
	}
	hostID, thread, locked := o.hostID, o.thread.orDefault(), o.locked
	if hostID == "" {
		hostID = core.HostID(lookup)
	}
	// Every PE looks at the host's memory before any makes its heap.
	avail, _ := core.MemAvailable()
	host, err := checkJob(boot, jobFacts{HeapSize: heapSize, Program: prog, Host: hostID, Avail: avail})
	if err != nil {
		return nil, err
	}
	cfg := &core.Config{Bootstrap: boot, JobID: jobID, Secret: secret, Env: lookup, Log: log, HostID: hostID,
		LockedCallers: locked}
	cpus, err := cfg.CPUs()
	if err := core.Agree(boot, err); err != nil {
		return nil, err
	}
	// The one waiting policy of this PE, shmem's waits and the
	// provider's alike.
	waiting := core.NewWaiting(host.pes, cpus)
	cfg.Waiting = &waiting
	prov, dom, err := core.Open(cfg, spec)
	if err != nil {
		return nil, err
	}
	w := &World{
		me: boot.Rank(), npes: boot.Size(), boot: boot, provider: prov, info: prov.Info(), dom: dom,
		heapSize: heapSize, log: log, lookup: lookup, contexts: map[*Context]struct{}{}, closed: make(chan struct{}), inits: 1,
		slice: waitSlice, reportAfter: DefaultWaitReport, reportOut: o.reportOut,
	}
	if o.reportAfter != nil {
		w.reportAfter = *o.reportAfter
	}
	if w.reportOut == nil {
		w.reportOut = os.Stderr
	}
	w.hostYield = hostYieldOf(dom)
	if locked {
		w.slice = lockedWaitSlice
	}
	fail := func(err error) (*World, error) {
		return nil, errors.Join(err, dom.Close())
	}
	tail := tailSize(w.npes)
	if err := checkHeapSize(w.info, heapSize, tail); err != nil {
		return fail(err)
	}
	// The PEs of a host decide alike from the same figures, and say it
	// once each; PEs of other hosts hear of it and stop too.
	memErr := checkHostMemory(heapSize, internalSize+heapSize+tail, host.pes, host.avail, host.availKnown)
	if err := core.Agree(boot, memErr); memErr != nil {
		return fail(memErr)
	} else if err != nil {
		return fail(err)
	}
	// A provider that can reserves the heap, and shmem commits what it
	// uses: its own parts now, the program's blocks as Malloc hands them
	// out (commitBlock), so a job takes of its host what it allocates.
	total := internalSize + heapSize + tail
	w.committer, _ = dom.(core.Committer)
	w.shmDir, w.commitHook = core.ShmDir(lookup), o.commit
	if w.committer != nil {
		w.heap, err = w.committer.NewReservedRegion(total)
	} else {
		w.heap, err = dom.NewRegion(total)
	}
	if err != nil {
		return fail(heapError(prov.Name(), heapSize, tail, err))
	}
	w.local = w.heap.Local()
	if len(w.local) != total {
		return fail(fmt.Errorf("provider %s returned a region of %d bytes for %d", prov.Name(), len(w.local), total))
	}
	if w.committer != nil {
		// The collectives' words and buffers, the exit word and the
		// active sets' scratch after it are used by every job:
		// committed at once, on every PE or none.
		err := w.committer.Commit(w.heap, 0, internalSize)
		if err == nil {
			err = w.committer.Commit(w.heap, internalSize+heapSize, tail)
		}
		if err := core.Agree(boot, err); err != nil {
			return fail(heapError(prov.Name(), heapSize, tail, err))
		}
	}
	w.base = mem.Addr(w.local)
	w.waiter, _ = dom.(core.LocalWaiter)
	w.direct, _ = dom.(core.DirectAccess)
	w.failer, _ = dom.(core.Failer)
	// Below ThreadMultiple no two goroutines use the default context at
	// once, so its endpoint may skip the locking a shared one needs.
	ep, err := dom.NewEndpoint(core.EndpointOptions{Serialized: thread < ThreadMultiple})
	if err != nil {
		return fail(err)
	}
	w.def = Context{w: w, ep: ep}
	w.thread = thread
	w.alloc.init(internalSize, internalSize+heapSize)
	w.coll.hostMap = o.hostMap
	if err := w.coll.init(w, hostID, waiting); err != nil {
		return fail(err)
	}
	if err := w.syncAll("init"); err != nil {
		return fail(err)
	}
	return w, nil
}

func singletonJobID() string {
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("single-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
}

// MyPE is this PE's number, from 0 to NPEs()-1.
func (w *World) MyPE() int { return w.me }

// NPEs is the number of PEs in the job.
func (w *World) NPEs() int { return w.npes }

// Provider is the name of the provider carrying this job.
func (w *World) Provider() string { return w.provider.Name() }

// ProviderInfo describes the provider carrying this job.
func (w *World) ProviderInfo() core.Info { return w.info }

// HeapSize is the size of the symmetric heap available to Malloc.
func (w *World) HeapSize() int { return w.heapSize }

// InfoGetVersion returns the spec version implemented (shmem_info_get_version).
func InfoGetVersion() (major, minor int) { return MajorVersion, MinorVersion }

// InfoGetName returns the vendor string (shmem_info_get_name).
func InfoGetName() string { return VendorString }

func (w *World) printInfo(out io.Writer, full bool, lookup func(string) (string, bool)) {
	// The build names the commit a report came from; the spec version
	// alone is the same for every build.
	fmt.Fprintf(out, "goshmem: OpenSHMEM %d.%d (%s), build %s\n", MajorVersion, MinorVersion, VendorString, version.Read())
	if !full {
		return
	}
	fmt.Fprintf(out, "goshmem: provider %s (%s), %d PEs, symmetric heap %s per PE\n",
		w.provider.Name(), w.info.Description, w.npes, core.FormatSize(int64(w.heapSize)))
	if w.launch != "" {
		fmt.Fprintf(out, "goshmem: launched by %s\n", w.launch)
	}
	if td, ok := w.dom.(core.TransportDescriber); ok {
		fmt.Fprintf(out, "goshmem: transports: %s\n", td.Transports())
	}
	for _, p := range infoSettings(w.info) {
		v, ok := p.Lookup(lookup)
		fmt.Fprintf(out, "goshmem:   %s=%s\n", p.Env, p.Shown(v, ok))
	}
}

// infoSettings are the variables SHMEM_INFO lists: every variable the
// program's packages declared, but of the providers only the job's.
func infoSettings(info core.Info) []core.Param {
	var out []core.Param
	listed := map[string]bool{}
	for _, p := range core.Settings() {
		if !strings.HasPrefix(p.Owner, "providers/") {
			out = append(out, p)
			listed[p.Env] = true
		}
	}
	for _, p := range info.Params {
		if !listed[p.Env] {
			out = append(out, p)
		}
	}
	return out
}

// Finalize leaves the job: it completes this PE's operations, waits for
// every PE to arrive, closes every context and releases the provider and
// the bootstrap. It is collective and idempotent; no goroutine the World
// started outlives it. The heap is then no longer the job's: slices of
// it kept past Finalize (and from Ptr) stay safe to touch, but read zeros
// or what this PE wrote through them since, and reach no other PE (see
// core.Domain's Close).
//
// Where Init returned w more than once, every Finalize but the one that
// balances the first Init only counts, and returns nil.
func (w *World) Finalize() error {
	w.initMu.Lock()
	if w.inits > 1 {
		w.inits--
		w.initMu.Unlock()
		return nil
	}
	w.inits = 0
	w.initMu.Unlock()
	jobWorld.CompareAndSwap(w, nil)
	w.finOnce.Do(func() {
		var errs []error
		w.ctxMu.Lock()
		ctxs := make([]*Context, 0, len(w.contexts))
		for c := range w.contexts {
			ctxs = append(ctxs, c)
		}
		w.ctxMu.Unlock()
		for _, c := range ctxs {
			errs = append(errs, c.Destroy())
		}
		errs = append(errs, w.def.ep.Quiet(), w.leave())
		close(w.closed)
		worldsHere.Add(-1)
		errs = append(errs, w.def.ep.Close(), w.dom.Close(), w.boot.Close())
		if err := errors.Join(errs...); err != nil {
			w.finErr = fmt.Errorf("shmem: finalize: %w", err)
		}
	})
	return w.finErr
}

// Err reports a global exit, a lost peer or a finalized World; nil while
// the job is healthy. A peer lost because of a global exit is reported as
// the global exit.
func (w *World) Err() error {
	select {
	case <-w.closed:
		return fmt.Errorf("shmem: use after Finalize: %w", core.ErrClosed)
	default:
	}
	if err := w.exitErr(); err != nil {
		return err
	}
	if w.failer != nil {
		if err := w.failer.Err(); err != nil {
			return w.exitOr(err)
		}
	}
	return w.exitOr(w.boot.Err())
}
