package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/launcher"
	"github.com/goshmem/goshmem/shmem"
)

// Harness says which provider to test and how.
type Harness struct {
	// Provider is the provider's registered name; it must be linked into
	// the test binary.
	Provider string
	// NPEs are the job sizes every case runs with; nil means 2, 3 and 4.
	NPEs []int
	// HeapSize is each PE's symmetric heap; 0 means 8 MiB.
	HeapSize int64
	// Env adds environment variables (provider parameters) for the PEs.
	Env map[string]string
	// Timeout is the watchdog of one case at one job size; 0 means 2 min.
	Timeout time.Duration
	// FlowOps is how many operations each flow case issues without a
	// quiet; 0 means 100,000. A protocol with small windows and slow
	// transfers may take fewer, still far more than its windows hold.
	FlowOps int
	// PEsPerHost, if not 0, makes the PEs of an in-process job pose as
	// running on hosts of that many PEs each (PEs 0..PEsPerHost-1 on the
	// first, and so on), through Config.HostID: a job that spans hosts
	// with several PEs on one gets the selected provider composed with
	// shared memory inside each host (see core.Composer), and the cases
	// are skipped by what the composite offers. RunProcesses gives each
	// PE process its host the same way.
	PEsPerHost int
	// Only, if not nil, runs only the cases whose names begin with one of
	// these prefixes: a provider built to test one promise (a test
	// double) runs the cases about it.
	Only []string
	// Bubble, if not nil, runs each case at each job size inside it: a
	// provider over a device in virtual time passes testing/synctest.Test,
	// so that the job's clock is the bubble's.
	Bubble func(t *testing.T, f func(t *testing.T))
}

// runs reports whether the harness runs case c (see Only).
func (h *Harness) runs(c Case) bool {
	if h.Only == nil {
		return true
	}
	for _, p := range h.Only {
		if strings.HasPrefix(c.Name, p) {
			return true
		}
	}
	return false
}

// hostID is the host rank poses as running on, or "" for the real one.
func (h *Harness) hostID(rank int) string {
	if h.PEsPerHost <= 0 {
		return ""
	}
	return "conformance-host-" + strconv.Itoa(rank/h.PEsPerHost)
}

// info is what the cases are skipped by: the provider's Info, or the
// composite's when the PEs pose as several hosts.
func (h *Harness) info(t *testing.T) core.Info {
	info := providerInfo(t, h.Provider)
	if c := core.RegisteredComposer(); c != nil && h.PEsPerHost > 0 {
		p, _ := core.Lookup(h.Provider)
		info = c.Compose(p).Info()
	}
	return info
}

func (h *Harness) npes() []int {
	if len(h.NPEs) == 0 {
		return []int{2, 3, 4}
	}
	return h.NPEs
}

func (h *Harness) heapSize() int64 {
	if h.HeapSize == 0 {
		return 8 << 20
	}
	return h.HeapSize
}

func (h *Harness) flowOps() int {
	if h.FlowOps == 0 {
		return defaultFlowOps
	}
	return h.FlowOps
}

func (h *Harness) timeout() time.Duration {
	if h.Timeout == 0 {
		return 2 * time.Minute
	}
	return h.Timeout
}

// Case is one behaviour of the contract, checked on every PE of a job.
// Exactly one of Shmem and Core is set: Shmem cases run through the shmem
// API, Core cases talk to the provider's domain directly, to check what
// shmem would otherwise hide (such as the provider's own bounds checks).
type Case struct {
	Name string
	// Needs lists the capabilities the case exercises; it is skipped, by
	// name, on providers that lack them.
	Needs core.Caps
	// MinPEs skips job sizes below it; MaxPEs, if not 0, those above it,
	// for cases whose behaviour does not depend on the job's size and
	// that are too long to run at every size.
	MinPEs, MaxPEs int
	Shmem          func(t *T, w *shmem.World)
	Core           func(t *T, j CoreJob)
}

// CoreJob is what a Core case works with.
type CoreJob struct {
	Domain core.Domain
	Boot   core.Bootstrap
	Info   core.Info
}

// Run runs every case in this process, PEs as goroutines.
func Run(t *testing.T, h Harness) {
	info := h.info(t)
	eachCase(t, h, info, func(t *testing.T, c Case, n int) { runInProcess(t, h, c, n, info) })
}

// eachCase runs one subtest per case and job size, skipping what the
// provider's Info says it cannot do.
func eachCase(t *testing.T, h Harness, info core.Info, run func(t *testing.T, c Case, n int)) {
	for _, c := range Cases() {
		if !h.runs(c) {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			if skip := skipReason(c, info); skip != "" {
				t.Skip(skip)
			}
			for _, n := range h.npes() {
				if n >= c.MinPEs && (c.MaxPEs == 0 || n <= c.MaxPEs) {
					t.Run("np="+strconv.Itoa(n), func(t *testing.T) {
						if h.Bubble != nil {
							h.Bubble(t, func(t *testing.T) { run(t, c, n) })
							return
						}
						run(t, c, n)
					})
				}
			}
		})
	}
}

func providerInfo(t *testing.T, name string) core.Info {
	t.Helper()
	p, err := core.Lookup(name)
	if err != nil {
		t.Fatalf("conformance: %v (is the provider's package imported by the test?)", err)
	}
	return p.Info()
}

func skipReason(c Case, info core.Info) string {
	if missing := c.Needs &^ info.Caps; missing != 0 {
		return fmt.Sprintf("provider %s lacks %s", info.Name, missing)
	}
	return ""
}

func (h *Harness) envLookup(shmDir string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return shmDir, true
		}
		if v, ok := h.Env[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
}

func runInProcess(t *testing.T, h Harness, c Case, n int, info core.Info) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	boots := bootstrap.NewLocal(n)
	jobID := "conf-" + randomHex(6)
	env := h.envLookup(ShmDir(t))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pes := make([]*T, n)
	var wg sync.WaitGroup
	for rank := range n {
		pes[rank] = &T{pe: rank, flow: h.flowOps()}
		wg.Add(1)
		go func(pt *T, b *bootstrap.Local) {
			defer wg.Done()
			runPE(pt, c, info, peSetup{
				shmemOpts: []shmem.Option{shmem.WithBootstrap(b, jobID), shmem.WithProvider(h.Provider),
					shmem.WithHeapSize(h.heapSize()), shmem.WithEnv(env), shmem.WithLogger(log),
					shmem.WithHostID(h.hostID(pt.pe))},
				coreConfig: func() (*core.Config, error) {
					return &core.Config{Bootstrap: b, JobID: jobID, Env: env, Log: log, HostID: h.hostID(pt.pe)}, nil
				},
				kill: b.Kill,
				spec: h.Provider,
			})
		}(pes[rank], boots[rank])
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	watchdog := time.NewTimer(h.timeout())
	defer watchdog.Stop()
	select {
	case <-done:
	case <-watchdog.C:
		// The PEs are goroutines that cannot be stopped from outside: say
		// where each one is and end the test binary.
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "conformance: case %s with %d PEs on %s hung for %v; goroutines:\n%s\n",
			c.Name, n, h.Provider, h.timeout(), buf)
		panic("conformance: watchdog expired in " + t.Name())
	}
	reportPEs(t, pes)
}

// peSetup is how a PE joins its job: through shmem for Shmem cases,
// through a bare core.Config for Core cases.
type peSetup struct {
	shmemOpts  []shmem.Option
	coreConfig func() (*core.Config, error)
	// kill marks the PE lost after a fatal failure, so the others stop
	// waiting for it.
	kill func()
	// spec is what Core cases open with; "" means the provider's name.
	spec string
}

// runPE runs one PE of a case: it joins the job, runs the case and leaves.
func runPE(pt *T, c Case, info core.Info, s peSetup) {
	finished := false
	var cleanup func()
	defer func() {
		if r := recover(); r != nil {
			pt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
		if !finished {
			s.kill()
		}
		if cleanup != nil {
			cleanup()
		}
	}()
	if c.Shmem != nil {
		w, err := shmem.Init(s.shmemOpts...)
		if err != nil {
			pt.Fatalf("init: %v", err)
		}
		cleanup = func() {
			if err := w.Finalize(); err != nil && finished {
				pt.Errorf("finalize: %v", err)
			}
		}
		c.Shmem(pt, w)
	} else {
		cfg, err := s.coreConfig()
		if err != nil {
			pt.Fatalf("bootstrap: %v", err)
		}
		spec := s.spec
		if spec == "" {
			spec = info.Name
		}
		_, d, err := core.Open(cfg, spec)
		if err != nil {
			cfg.Bootstrap.Close()
			pt.Fatalf("open: %v", err)
		}
		cleanup = func() {
			err := errors.Join(d.Close(), cfg.Bootstrap.Close())
			if err != nil && finished {
				pt.Errorf("close: %v", err)
			}
		}
		c.Core(pt, CoreJob{Domain: d, Boot: cfg.Bootstrap, Info: info})
	}
	finished = true
}

func reportPEs(t *testing.T, pes []*T) {
	t.Helper()
	var b strings.Builder
	for _, p := range pes {
		if p.Failed() {
			b.WriteString(p.report())
		}
	}
	if b.Len() > 0 {
		t.Error("\n" + b.String())
	}
}

// ShmDir is a directory for a test job's files (GOSHMEM_SHM_DIR),
// removed when the test ends. Its path is short, unlike t.TempDir's,
// which holds the test's name: a plugin's socket goes under the job's
// directory only where the path fits a unix socket's (providers/plugin),
// and elsewhere in the system's temporary directory, where a PE that a
// test kills leaves it behind.
func ShmDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "gsh")
	if err != nil {
		t.Fatalf("shm dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// envCase names the case a child process runs as one PE; envPerHost and
// envFlowOps are the harness's PEsPerHost and FlowOps.
const (
	envCase    = "GOSHMEM_CONFORMANCE_CASE"
	envPerHost = "GOSHMEM_CONFORMANCE_PES_PER_HOST"
	envFlowOps = "GOSHMEM_CONFORMANCE_FLOW_OPS"
)

// The harness's variables, in the registry (core.Declare): it sets them
// for the processes it starts, each one PE of a case.
var (
	caseParam = core.Declare(core.Param{Env: envCase,
		Help: "set by the conformance harness: the case a process it started runs, as one PE"})[0]
	perHostParam = core.Declare(core.Param{Env: envPerHost, Kind: core.KindInt, Default: "0",
		Help: "set by the conformance harness: how many PEs of the case share a host (0: all)"})[0]
	flowOpsParam = core.Declare(core.Param{Env: envFlowOps, Kind: core.KindInt, Default: "0",
		Help: "set by the conformance harness: the operations a flow-control case issues"})[0]
)

// Main is the TestMain of a provider's conformance test: in a process the
// launcher started for RunProcesses, it runs one case as one PE and exits;
// in one started for a KilledPE job, it runs one PE of that job and exits;
// otherwise it runs the tests.
func Main(m *testing.M) {
	if victim, ok := killedVictimParam.Raw(nil); ok {
		os.Exit(killedChildMain(victim))
	}
	name, ok := caseParam.Raw(nil)
	if !ok {
		os.Exit(m.Run())
	}
	os.Exit(childMain(name))
}

// childCount reads the count a case process's variable name carries, 0
// where it is unset; a malformed one, or one below least, is reported
// (want says what is allowed) and ok is false.
func childCount(p core.Param, least int, want string) (n int, ok bool) {
	name := p.Env
	v, set := p.Raw(nil)
	if !set {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		fmt.Fprintf(os.Stderr, "conformance: %s=%q: want %s\n", name, v, want)
		return 0, false
	}
	return n, true
}

func childMain(name string) int {
	i := slices.IndexFunc(Cases(), func(c Case) bool { return c.Name == name })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "conformance: no case %q\n", name)
		return 2
	}
	c := Cases()[i]
	job, launched, err := bootstrap.JobFromEnv(os.LookupEnv)
	if err != nil || !launched {
		fmt.Fprintf(os.Stderr, "conformance: case %s: not started by the launcher (%v)\n", name, err)
		return 2
	}
	// Unset: the PEs run on the hosts they are on (a launcher that makes
	// real hosts, as the namespaced ones, sets nothing).
	per, ok := childCount(perHostParam, 0, "0 or more PEs per host")
	if !ok {
		return 2
	}
	flow, ok := childCount(flowOpsParam, 1, "a count of operations, at least 1")
	if !ok {
		return 2
	}
	given := &Harness{PEsPerHost: per, FlowOps: flow}
	host := given.hostID(job.Rank)
	spec, _ := core.ProviderParam.Lookup(nil)
	p, err := core.Lookup(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		return 2
	}
	// What the cases are skipped by, as Harness.info has it.
	info := p.Info()
	if comp := core.RegisteredComposer(); comp != nil && per > 0 {
		info = comp.Compose(p).Info()
	}
	pt := &T{pe: job.Rank, flow: given.flowOps()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runPE(pt, c, info, peSetup{
			shmemOpts: []shmem.Option{shmem.WithHostID(host)},
			coreConfig: func() (*core.Config, error) {
				b, err := bootstrap.Connect(job, time.Minute)
				if err != nil {
					return nil, err
				}
				return &core.Config{Bootstrap: b, JobID: job.JobID, Secret: job.Secret, HostID: host}, nil
			},
			spec: spec,
			// A process that fails fatally exits: the launcher then ends
			// the job, as it would for any PE that dies.
			kill: func() {
				fmt.Fprint(os.Stderr, pt.report())
				os.Exit(1)
			},
		})
	}()
	<-done
	if pt.Failed() {
		fmt.Fprint(os.Stderr, pt.report())
		return 1
	}
	fmt.Printf("%s %d %s\n", ranMarker, job.Rank, name)
	return 0
}

// ranMarker starts the line a child prints after running its case, so the
// parent can tell a passing case from a child that never ran it.
const ranMarker = "conformance: ran PE"

// RunProcesses runs every case with each PE a separate OS process: the
// test binary itself, started through the launcher, with Main picking the
// case. The test binary's TestMain must call Main.
func RunProcesses(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	info := h.info(t)
	eachCase(t, h, info, func(t *testing.T, c Case, n int) { runProcesses(t, h, c, n) })
}

func runProcesses(t *testing.T, h Harness, c Case, n int) {
	env := []string{
		envCase + "=" + c.Name,
		envPerHost + "=" + strconv.Itoa(h.PEsPerHost),
		envFlowOps + "=" + strconv.Itoa(h.flowOps()),
		core.EnvShmDir + "=" + ShmDir(t),
		shmem.EnvSymmetricSize + "=" + strconv.FormatInt(h.heapSize(), 10),
		// Race-built children would otherwise linger a second at exit.
		"GORACE=atexit_sleep_ms=0",
	}
	for k, v := range h.Env {
		env = append(env, k+"="+v)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout())
	defer cancel()
	code, err := launcher.Run(ctx, launcher.Options{
		NP: n, Program: os.Args[0], Provider: h.Provider, Env: env, Tag: true,
		Stdout: &out, Stderr: &out,
	})
	if err != nil || code != 0 {
		t.Errorf("case %s with %d PE processes: exit %d, %v\n%s", c.Name, n, code, err, out.String())
		return
	}
	for pe := range n {
		if !strings.Contains(out.String(), fmt.Sprintf("%s %d %s\n", ranMarker, pe, c.Name)) {
			t.Errorf("case %s: PE %d of %d exited 0 without running the case\n%s", c.Name, pe, n, out.String())
		}
	}
}

// SkipUnderRace skips a test that make test runs without the race
// detector (the Makefile's NORACE_TESTS: the Wide tests, and a suite the
// detector makes too long). A partner run under the detector runs the
// same code (the same provider at a smaller job, or the same host side of
// a boundary), and the detector would only cost time.
func SkipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("the rest of the matrix runs without the race detector (make test's NORACE_TESTS); its partner test runs under it")
	}
}
