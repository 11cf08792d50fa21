package launcher

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/globalexit"
	procstate "github.com/goshmem/goshmem/internal/proc"
	"github.com/goshmem/goshmem/internal/sys"
)

// Options describe a job.
type Options struct {
	NP      int      // number of PEs, at least 1
	Program string   // the program every PE runs: a path, or a name looked up in PATH
	Args    []string // its arguments

	// Provider, if set, becomes GOSHMEM_PROVIDER in every PE.
	Provider string
	// Tag prefixes every line a PE writes with "[pe N] ".
	Tag bool
	// Env holds extra KEY=VALUE pairs for the PEs, on top of os.Environ().
	Env []string

	Stdout, Stderr io.Writer // nil means os.Stdout, os.Stderr

	// Grace is how long PEs get between SIGTERM and SIGKILL when the job
	// is ended; zero means DefaultGrace, negative means SIGKILL at once.
	Grace time.Duration
	// Bind is the address the store listens on; empty means DefaultBind.
	// Bind to a reachable address when PEs run on other hosts. PEs started
	// here are told the bound address, with an unspecified IP (0.0.0.0,
	// ::) replaced by loopback.
	Bind string
	// CPUBind is how this host's PEs are placed on the CPUs the launcher
	// may use (Binding); the zero value leaves them unbound.
	CPUBind Binding
	// Verbose writes the job id, the store's address, each PE's pid and
	// membership changes to Stderr.
	Verbose bool
	// Started, if set, is called with each PE's rank and pid as it starts,
	// on the goroutine that called Run.
	Started func(pe, pid int)

	// Hosts, if set, are where the PEs run, dealt by slot (see Place):
	// this host's PEs are started directly, other hosts' through the rsh
	// command (GOSHMEM_RSH, default ssh), which runs LaunchAgent there
	// as an agent (RunAgent) that starts and supervises them. NP 0 means
	// every slot. Nil runs every PE here.
	Hosts []Host
	// PerHost, when positive, gives every host that many slots (-N).
	PerHost int
	// LaunchAgent is the command that starts oshrun on other hosts (its
	// words; AgentFlag is added); empty means this program's own path,
	// which must then be the same on every host.
	LaunchAgent []string
	// Export names variables of the launcher's environment that PEs on
	// other hosts get as well (-x VAR). GOSHMEM_* and SHMEM_* always go.
	Export []string

	// place is the host of each rank, "" for this one (set by prepare).
	place []string
	// StoppedAfter is how long a PE's process may stay stopped by a
	// signal (SIGSTOP, SIGTSTP) before the job loses it: a stopped
	// process keeps its connections open, so neither the store nor most
	// transports can tell it from a slow one, and the others would wait
	// for it for ever. The store then tells the others the PE is lost,
	// their operations fail, and the job ends blaming it. A process a
	// debugger stops is not counted. Zero means DefaultStoppedAfter,
	// negative never.
	StoppedAfter time.Duration
}

const (
	DefaultGrace = 3 * time.Second
	// DefaultStoppedAfter is Options.StoppedAfter's default.
	DefaultStoppedAfter = 5 * time.Second
	DefaultBind         = "127.0.0.1:0"

	// ExitUsage is Run's exit code for options that cannot start a job.
	ExitUsage = 2
	// ExitInterrupted is Run's exit code when ctx ended the job.
	ExitInterrupted = 130
	// ExitLost is Run's exit code when the job ended because a PE left
	// without finalizing but with status 0, or vanished while running.
	ExitLost = 1
)

// lostWait is how long the launcher waits, after the store reports a PE
// lost, for that PE's exit status, so the message names the status or
// signal rather than just the broken connection.
const lostWait = 2 * time.Second

// settleWait is how long the launcher waits, once a PE has failed without
// a signal, for news of an earlier failure before blaming it: the others
// see a PE die, through the store or their own links, and may exit before
// the dead one's status or the store's report reaches the launcher.
const settleWait = time.Second

// waitDelay bounds how long a PE's output may stay open after it exited
// (a child it left behind holding its stdout).
const waitDelay = 2 * time.Second

// Run runs a job of opts.NP processes and returns its exit status: 0 if
// every PE exited 0 (having finalized, if it joined the store), else the
// status of the first PE that failed (128+signal for a signal), ExitLost,
// or ExitInterrupted once ctx is done. A failing PE ends the job: the
// others get SIGTERM, then SIGKILL after the grace period. Run returns
// only after every PE has exited, and it then removes the job's shared
// memory directory. err is non-nil when the job could not be started
// (exit code ExitUsage: bad options, no process started) or was
// interrupted by ctx.
func Run(ctx context.Context, opts Options) (exitCode int, err error) {
	o, path, err := prepare(opts)
	if err != nil {
		return ExitUsage, err
	}
	if err := context.Cause(ctx); err != nil {
		return ExitInterrupted, fmt.Errorf("launcher: not started: %w", err)
	}
	// Pdeathsig fires when the thread that started the child exits, not
	// the process (golang/go#27505). Holding this goroutine on its thread
	// until every PE has exited keeps other goroutines, which might lock
	// the thread and exit with it, off it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	jobID, err := bootstrap.NewJobID()
	if err != nil {
		return 1, err
	}
	secret, err := bootstrap.NewSecret()
	if err != nil {
		return 1, err
	}
	j := &job{
		o:      o,
		path:   path,
		jobID:  jobID,
		secret: secret,
		stdout: &output{w: o.Stdout},
		stderr: &output{w: o.Stderr},
	}
	if o.remote() {
		if j.rsh, err = rshCommand(os.LookupEnv); err != nil {
			return ExitUsage, fmt.Errorf("launcher: %w", err)
		}
		j.launchAgent = o.LaunchAgent
		if len(j.launchAgent) == 0 {
			self, err := os.Executable()
			if err != nil {
				return ExitUsage, fmt.Errorf("launcher: cannot tell this program's path to run it on other hosts (%v); give the launch agent: %w", err, core.ErrInvalid)
			}
			j.launchAgent = []string{self}
		}
	}

	ln, err := net.Listen("tcp", o.Bind)
	if err != nil {
		return 1, fmt.Errorf("launcher: the bootstrap store cannot listen on %s: %w", o.Bind, err)
	}
	srv := bootstrap.NewServer(ln, o.NP, secret)
	srv.Log = slog.New(slog.NewTextHandler(j.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Joined, then finalized or lost: at most two events per PE, so the
	// store never blocks on this channel. Rejections are logged by the
	// store and need no action.
	events := make(chan bootstrap.Event, 2*o.NP)
	srv.OnEvent = func(e bootstrap.Event) {
		if e.Kind != bootstrap.EventRejected {
			events <- e
		}
	}
	j.events = events
	j.lose = srv.Lose
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve() }()

	addr := advertise(ln.Addr())
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		j.storePort = ta.Port
		if !ta.IP.IsUnspecified() {
			j.bindHost = ta.IP.String()
		}
	}
	j.env = childEnv(o, jobID, secret, addr)
	// A job whose launcher was killed outright leaves its directory
	// behind (its PEs die with the launcher, before anyone cleans up);
	// the next job on the host removes it once none of its processes runs.
	for _, dir := range core.SweepJobDirs(envLookup(j.env)) {
		j.logf(o.Verbose, "removed %s, left by a job whose processes are gone", dir)
	}
	dir, held := holdJobDir(envLookup(j.env), jobID)
	if !held {
		j.logf(o.Verbose, "the job's directory %s could not be made: the providers that need it will say why", dir)
	}
	j.logf(o.Verbose, "job %s: %d PEs of %s, bootstrap store at %s", jobID, o.NP, path, addr)

	code, err := j.run(ctx)

	err = errors.Join(err, srv.Close(), <-serveDone)
	// Every PE has exited: nothing can be using the job's shared memory.
	if rerr := releaseJobDir(dir, held); rerr != nil {
		j.logf(true, "could not remove the job's directory: %v", rerr)
	}
	return code, err
}

// holdJobDir makes the job's directory and records the launcher as one of
// its owners for the job's lifetime. The record a PE's global_exit leaves
// there is read when the other PEs' exits reach the launcher, which may
// be after every PE has exited (one that exits at once after global_exit
// never leaves the directory), and another job's sweep removes a
// directory whose recorded owners are all gone. held is false where the
// directory cannot be made (GOSHMEM_SHM_DIR missing): the providers that
// need it report that to the PEs.
func holdJobDir(lookup func(string) (string, bool), jobID string) (dir string, held bool) {
	dir, err := core.MakeJobDir(lookup, jobID)
	if err != nil {
		return core.JobDir(lookup, jobID), false
	}
	return dir, true
}

// releaseJobDir undoes holdJobDir once every PE has exited, and removes
// the directory with whatever crashed PEs left in it.
func releaseJobDir(dir string, held bool) error {
	var lerr error
	if held {
		lerr = core.LeaveJobDir(dir)
	}
	return errors.Join(lerr, os.RemoveAll(dir))
}

// prepare validates opts and fills in defaults; it starts nothing.
func prepare(o Options) (Options, string, error) {
	if o.Hosts != nil {
		place, err := Place(o.Hosts, o.NP, o.PerHost)
		if err != nil {
			return o, "", fmt.Errorf("launcher: %w", err)
		}
		o.NP = len(place)
		o.place = place
		for r, h := range place {
			if isLocal(h) {
				o.place[r] = ""
			}
		}
	}
	if o.NP < 1 {
		return o, "", fmt.Errorf("launcher: %d PEs: a job needs at least 1: %w", o.NP, core.ErrInvalid)
	}
	if o.Program == "" {
		return o, "", fmt.Errorf("launcher: no program to run: %w", core.ErrInvalid)
	}
	path, err := exec.LookPath(o.Program)
	if err != nil {
		return o, "", fmt.Errorf("launcher: %w: %w", err, core.ErrInvalid)
	}
	if o.remote() {
		// Other hosts run it by the same path.
		if path, err = filepath.Abs(path); err != nil {
			return o, "", fmt.Errorf("launcher: %w", err)
		}
	}
	for _, kv := range o.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return o, "", fmt.Errorf("launcher: environment entry %q is not KEY=VALUE: %w", kv, core.ErrInvalid)
		}
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.StoppedAfter == 0 {
		o.StoppedAfter = DefaultStoppedAfter
	}
	if o.Bind == "" {
		o.Bind = DefaultBind
		if o.remote() {
			// Other hosts must reach the store; it admits only PEs
			// that prove they hold the job's secret.
			o.Bind = "0.0.0.0:0"
		}
	}
	host, _, err := net.SplitHostPort(o.Bind)
	if err != nil {
		return o, "", fmt.Errorf("launcher: store address %q: %w: %w", o.Bind, err, core.ErrInvalid)
	}
	if ip := net.ParseIP(host); o.remote() && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return o, "", fmt.Errorf("launcher: the store would listen on %s, which PEs on other hosts cannot reach; bind it to an address of this host they can reach, or leave it unset: %w", o.Bind, core.ErrInvalid)
	}
	return o, path, nil
}

// remote says whether some PEs run on other hosts.
func (o Options) remote() bool {
	for _, h := range o.place {
		if h != "" {
			return true
		}
	}
	return false
}

// localPEs is how many PEs this host runs itself.
func (o Options) localPEs() int {
	if o.place == nil {
		return o.NP
	}
	n := 0
	for _, h := range o.place {
		if h == "" {
			n++
		}
	}
	return n
}

// advertise is the store address PEs on this host are given.
func advertise(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return a.String()
	}
	ip := net.IPv4(127, 0, 0, 1)
	if ta.IP.To4() == nil && !ta.IP.Equal(net.IPv6unspecified) {
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(ta.Port))
}

// numCPU is how many CPUs the PEs share; tests replace it.
var numCPU = runtime.NumCPU

// childEnv is the environment of every PE this launcher starts itself
// but GOSHMEM_RANK (see peEnv): its own environment plus opts.Env and the
// provider, for a job whose local PEs number local.
func childEnv(o Options, jobID string, secret []byte, addr string) []string {
	return peEnv(os.Environ(), o.extraEnv(), o.localPEs(), o.NP, jobID, hex.EncodeToString(secret), addr)
}

// extraEnv is what the launcher adds to its PEs' environments beyond the
// job's contract: opts.Env, then the provider.
func (o Options) extraEnv() []string {
	env := slices.Clone(o.Env)
	if o.Provider != "" {
		env = append(env, core.EnvProvider+"="+o.Provider)
	}
	return env
}

// peEnv is a PE's environment but GOSHMEM_RANK: base, then extra, then
// the job's contract, later entries winning. Contract variables in base
// or extra (from an enclosing job) are dropped so they cannot contradict
// this job's. Unless the user has chosen, each PE runs Go code on its
// share of its host's CPUs at a time (GOMAXPROCS = CPUs / PEs on the
// host, at least 1), as mpirun gives each rank its cores, and is told how
// many CPUs the host's PEs share (core.EnvCPUs).
func peEnv(base, extra []string, local, size int, jobID, secretHex, addr string) []string {
	contract := func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(bootstrap.ContractEnv, k)
	}
	env := slices.DeleteFunc(slices.Clone(base), contract)
	env = append(env, slices.DeleteFunc(slices.Clone(extra), contract)...)
	if _, set := envLookup(env)("GOMAXPROCS"); !set && local > 0 {
		// A PE's Go threads beyond its share (idle Ps spinning for work,
		// a woken goroutine started on a second thread) take CPU time
		// from the PE another one waits for: with 4 PEs on 2 CPUs that
		// more than doubled barrier latency, and with 2 PEs on 2 CPUs it
		// doubled tcp's round trips, whose readers poll their sockets.
		env = append(env, "GOMAXPROCS="+strconv.Itoa(max(1, numCPU()/local)))
	}
	if _, set := envLookup(env)(core.EnvCPUs); !set {
		// A PE bound to one CPU sees one; its providers must still
		// know how many the job shares.
		env = append(env, core.EnvCPUs+"="+strconv.Itoa(numCPU()))
	}
	return append(env,
		bootstrap.EnvSize+"="+strconv.Itoa(size),
		bootstrap.EnvJobID+"="+jobID,
		bootstrap.EnvBootstrap+"="+addr,
		bootstrap.EnvSecret+"="+secretHex,
	)
}

// envLookup looks a variable up in env as exec would pass it: the last
// entry for a key wins.
func envLookup(env []string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
				return v, true
			}
		}
		return "", false
	}
}

// job is one run. Its fields are owned by the goroutine in Run; the only
// other goroutines are one waiter per PE, which report on exits, and the
// store's event goroutine, which reports on events.
type job struct {
	o      Options
	path   string
	jobID  string
	secret []byte
	env    []string
	stdout *output
	stderr *output
	events <-chan bootstrap.Event
	lose   func(rank int, reason string) // tells the store a PE is lost

	// PEs on other hosts: how to reach them, and their agents' reports.
	rsh         []string
	launchAgent []string
	bindHost    string // the store's address when bound to one, else ""
	storePort   int
	agents      []*agentConn
	remote      chan remoteMsg

	pes     []*proc
	exits   chan exitReport
	expired chan int // ranks whose lostWait ran out
	timers  []*time.Timer

	// Which failure ends the job (blame.go), and its settle wait.
	blame  *blamer
	settle <-chan time.Time

	cause       string // why the job is being ended; "" while it runs
	code        int
	interrupted bool
	killAt      <-chan time.Time // when SIGTERMed PEs get SIGKILL
}

type proc struct {
	rank     int
	cmd      *exec.Cmd  // nil on another host
	agent    *agentConn // the agent running it on another host, or nil
	pid      int        // 0 until an agent reports it
	stdout   io.Writer
	stderr   io.Writer
	exited   bool
	what     string // how it exited, for the message
	code     int    // the job's status if it is the cause
	signaled bool   // killed by a signal (the launcher had sent none)
	lost     string // the store's reason, if it reported the PE lost
	// left says the store saw it close its connection cleanly: it
	// finalized, or its initialization failed and cleaned up, which
	// its exit status tells apart.
	left    bool
	flushes []func()
	// stopped is when the launcher first saw the process stopped by a
	// signal, zero while it runs.
	stopped time.Time
	// remoteStopped is what the agent of a PE on another host last said
	// of its process: stopped by a signal, or running.
	remoteStopped bool
}

type exitReport struct {
	rank     int
	what     string // how it ended, for the message
	code     int    // the status it implies
	signaled bool   // a signal killed it
}

// who names a PE in messages: its rank, pid and, if not this one, host.
func (p *proc) who() string {
	if p.agent != nil {
		if p.pid == 0 {
			return fmt.Sprintf("PE %d (on %s)", p.rank, p.agent.host)
		}
		return fmt.Sprintf("PE %d (pid %d on %s)", p.rank, p.pid, p.agent.host)
	}
	return fmt.Sprintf("PE %d (pid %d)", p.rank, p.pid)
}

// exitNews is how p exited, for the verbose output: a PE that closed its
// store connection cleanly and exited 0 finalized.
func (p *proc) exitNews() string {
	if p.left && p.code == 0 && !p.signaled {
		return "finalized and " + p.what
	}
	return p.what
}

// shortWhat is how p ended, for a line that follows the one that said it
// in full: "exit status 1", "killed by signal 9 (killed)".
func (p *proc) shortWhat() string {
	if status, ok := strings.CutPrefix(p.what, "exited with status "); ok {
		return "exit status " + status
	}
	return strings.TrimPrefix(p.what, "was ")
}

// where names a PE's process: its pid and, if not this one, its host.
func (p *proc) where() string {
	if p.agent != nil {
		return fmt.Sprintf("pid %d on %s", p.pid, p.agent.host)
	}
	return fmt.Sprintf("pid %d", p.pid)
}

func (j *job) run(ctx context.Context) (int, error) {
	n := j.o.NP
	j.exits = make(chan exitReport, n)
	j.expired = make(chan int, n)
	j.blame = newBlamer(n)
	defer func() {
		for _, t := range j.timers {
			t.Stop()
		}
	}()

	// Every PE has its record from the start; one not (yet) started
	// counts as exited, so nothing waits for or signals it.
	j.pes = make([]*proc, n)
	for r := range n {
		p := &proc{rank: r, exited: true}
		for _, s := range []struct {
			dst *io.Writer
			out *output
		}{{&p.stdout, j.stdout}, {&p.stderr, j.stderr}} {
			w := s.out.forPE(j.o.Tag, r)
			if lw, ok := w.(*lineWriter); ok {
				p.flushes = append(p.flushes, lw.flush)
			}
			*s.dst = w
		}
		j.pes[r] = p
	}

	cpus := j.bindings()
	startErr := j.startLocal(cpus)
	if startErr == nil {
		startErr = j.startRemote()
	}

	var watch <-chan time.Time
	if j.o.StoppedAfter > 0 && j.lose != nil {
		t := time.NewTicker(stopPoll)
		defer t.Stop()
		watch = t.C
	}
	done := ctx.Done()
	for j.blame.running > 0 {
		select {
		case <-watch:
			j.watchStopped()
		case x := <-j.exits:
			j.exited(x)
		case m := <-j.remote:
			j.fromAgent(m)
		case e := <-j.events:
			j.event(e)
		case r := <-j.expired:
			j.act(j.blame.lostExpired(r))
		case <-j.settle:
			j.settle = nil
			j.act(j.blame.settled())
		case <-done:
			done = nil
			if j.cause == "" {
				j.interrupted = true
				j.end(fmt.Sprintf("interrupted (%v)", context.Cause(ctx)), ExitInterrupted)
			}
		case <-j.killAt:
			j.killAt = nil
			for _, p := range j.pes {
				if !p.exited {
					j.logf(j.o.Verbose, "%s still running %v after SIGTERM: sending SIGKILL", p.who(), j.o.Grace)
				}
			}
			j.signal(syscall.SIGKILL)
		}
	}
	if j.cause == "" {
		// Every PE has exited: what the store reported before the last
		// exit still counts.
		j.drainEvents()
		j.act(j.blame.allExited())
	}
	j.reapAgents()
	// Whatever the store still reports changes nothing now.
	switch {
	case startErr != nil:
		return 1, startErr
	case j.interrupted:
		return j.code, fmt.Errorf("launcher: job %s interrupted: %w", j.jobID, context.Cause(ctx))
	}
	return j.code, nil
}

// stopPoll is how often the launcher looks for stopped PEs.
const stopPoll = 250 * time.Millisecond

// watchStopped loses, in the store, a PE whose process has been stopped by
// a signal for StoppedAfter. Its state is read from the system, which a
// stopped process cannot change.
func (j *job) watchStopped() {
	if j.cause != "" {
		return
	}
	now := time.Now()
	for _, p := range j.pes {
		if p.exited || p.lost != "" {
			continue
		}
		stopped := p.remoteStopped // on another host, its agent reads it there
		if p.agent == nil {
			stopped = procstate.Stopped(p.pid)
		}
		if !stopped {
			p.stopped = time.Time{}
			continue
		}
		if p.stopped.IsZero() {
			p.stopped = now
			j.logf(j.o.Verbose, "%s is stopped", p.who())
			continue
		}
		if d := now.Sub(p.stopped); d >= j.o.StoppedAfter {
			j.lose(p.rank, fmt.Sprintf("its process (%s) has been stopped by a signal for %v", p.where(), d.Round(time.Millisecond)))
		}
	}
}

// bindings returns the CPUs of each PE this host starts, in rank order,
// or nil to leave them unbound.
func (j *job) bindings() [][]int {
	cpus, err := sys.CPUs()
	if err != nil {
		return nil
	}
	sets := cpuSets(j.o.CPUBind, cpus, j.o.localPEs())
	if sets != nil {
		j.logf(j.o.Verbose, "PEs of this host bound to CPUs %v", sets)
	}
	return sets
}

// startLocal starts the PEs of this host, the i-th on cpus[i] if bound. On
// an error the job is being ended and the error says which PE.
func (j *job) startLocal(cpus [][]int) error {
	i := 0
	for r, p := range j.pes {
		if j.o.place != nil && j.o.place[r] != "" {
			continue
		}
		var set []int
		if cpus != nil {
			set = cpus[i]
		}
		i++
		err := sys.OnCPUs(set, func() error { return j.start(p) })
		if err != nil {
			j.end(fmt.Sprintf("could not start PE %d: %v", r, err), 1)
			return fmt.Errorf("launcher: starting PE %d: %w", r, err)
		}
		j.logf(j.o.Verbose, "PE %d: pid %d", r, p.pid)
		if j.o.Started != nil {
			j.o.Started(r, p.pid)
		}
	}
	return nil
}

func (j *job) start(p *proc) error {
	cmd := exec.Command(j.path, j.o.Args...)
	cmd.Args[0] = j.o.Program
	cmd.Env = append(slices.Clip(j.env), bootstrap.EnvRank+"="+strconv.Itoa(p.rank))
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd, p.pid, p.exited = cmd, cmd.Process.Pid, false
	j.blame.started()
	r := p.rank
	go func() {
		err := cmd.Wait()
		what, code, signaled := describe(cmd.ProcessState, err)
		j.exits <- exitReport{rank: r, what: what, code: code, signaled: signaled}
	}()
	return nil
}

// startRemote starts one agent per other host, which starts that host's
// PEs (see RunAgent).
func (j *job) startRemote() error {
	var hosts []string
	ranks := map[string][]int{}
	for r, h := range j.o.place {
		if h == "" {
			continue
		}
		if ranks[h] == nil {
			hosts = append(hosts, h)
		}
		ranks[h] = append(ranks[h], r)
	}
	// Per PE a start and an exit, per host an end and a global exit.
	j.remote = make(chan remoteMsg, 2*j.o.NP+2*len(hosts))
	for _, h := range hosts {
		a, err := j.startAgent(h, ranks[h], j.agentSpecFor(h, j.storePort))
		if err != nil {
			j.end(fmt.Sprintf("could not start PEs %v on %s: %v", ranks[h], h, err), 1)
			return fmt.Errorf("launcher: starting PEs on %s: %w", h, err)
		}
		j.agents = append(j.agents, a)
		for _, r := range ranks[h] {
			p := j.pes[r]
			p.agent, p.exited = a, false
			j.blame.started()
		}
		j.logf(j.o.Verbose, "PEs %v on %s: started through %s", ranks[h], h, strings.Join(a.cmd.Args, " "))
	}
	return nil
}

// fromAgent takes in what an agent reported.
func (j *job) fromAgent(m remoteMsg) {
	switch {
	case m.pid > 0:
		p := j.pes[m.rank]
		p.pid = m.pid
		j.logf(j.o.Verbose, "PE %d: pid %d on %s", m.rank, m.pid, m.agent.host)
		if j.o.Started != nil {
			j.o.Started(m.rank, m.pid)
		}
	case m.stopped != nil:
		// The agent watches its host's processes; the launcher's clock
		// decides how long is too long, as for its own.
		p := j.pes[m.rank]
		p.remoteStopped = *m.stopped
		if !p.remoteStopped {
			p.stopped = time.Time{}
		}
	case m.globalExit != nil:
		if j.cause == "" {
			j.end(globalExitCause(*m.globalExit), m.globalExit.Status&0xff)
		}
	case m.exit != nil:
		if !j.pes[m.rank].exited {
			j.exited(*m.exit)
		}
	case m.done:
		if m.err != nil {
			j.logf(j.cause == "" || j.o.Verbose, "host %s: %v", m.agent.host, m.err)
		}
		// PEs it did not report on are gone with it (they die with
		// their agent).
		for _, r := range m.agent.ranks {
			if !j.pes[r].exited {
				what := "was lost with its host's agent"
				if m.err != nil {
					what += " (" + m.err.Error() + ")"
				}
				j.exited(exitReport{rank: r, what: what, code: ExitLost})
			}
		}
	}
}

// reapAgents ends every agent's input and waits for their readers, which
// reap them; every PE has exited by now, so each exits at once.
func (j *job) reapAgents() {
	for _, a := range j.agents {
		a.close()
	}
	for _, a := range j.agents {
		<-a.gone
	}
	for len(j.remote) > 0 {
		<-j.remote
	}
}

func (j *job) exited(x exitReport) {
	// The store may have reported a failure before this exit: it is taken
	// into account first.
	j.drainEvents()
	p := j.pes[x.rank]
	p.exited = true
	for _, f := range p.flushes {
		f()
	}
	p.what, p.code, p.signaled = x.what, x.code, x.signaled
	said := false
	if j.o.Verbose {
		j.logf(true, "%s %s", p.who(), p.exitNews())
		said = true
	}
	if j.cause == "" {
		if rec, ok := globalexit.ReadRecord(core.JobDir(envLookup(j.env), j.jobID)); ok {
			// The job's status is the one global_exit was given, as the
			// process exit status carries it.
			j.end(globalExitCause(rec), rec.Status&0xff)
		}
	}
	j.act(j.blame.exit(p.rank, p.code, p.signaled, said))
}

func (j *job) event(e bootstrap.Event) {
	if e.Rank < 0 || e.Rank >= len(j.pes) {
		return
	}
	p := j.pes[e.Rank]
	switch e.Kind {
	case bootstrap.EventJoined:
		j.logf(j.o.Verbose, "PE %d %s", e.Rank, e.Kind)
		return
	case bootstrap.EventFinalized:
		// A clean close is a finalize only if the process then exits 0:
		// a PE whose initialization failed closes cleanly too. The exit
		// says which; news of it after the exit is told now.
		p.left = true
		if p.exited && p.code == 0 && !p.signaled {
			j.logf(j.o.Verbose, "PE %d finalized", e.Rank)
		}
		return
	case bootstrap.EventLost:
	default:
		return
	}
	j.logf(j.o.Verbose, "PE %d lost by the store: %s", e.Rank, e.Reason)
	p.lost = e.Reason
	j.act(j.blame.lost(p.rank))
}

// globalExitCause says how a recorded global exit ended the job: the
// program's call of global_exit, or the library ending the job on an
// error, whose reason it repeats.
func globalExitCause(r globalexit.Record) string {
	if r.Reason != "" {
		return fmt.Sprintf("PE %d ended the job with status %d: %s", r.PE, r.Status, r.Reason)
	}
	return fmt.Sprintf("PE %d called global_exit(%d)", r.PE, r.Status)
}

// drainEvents handles the store's events that have already arrived.
func (j *job) drainEvents() {
	for {
		select {
		case e := <-j.events:
			j.event(e)
		default:
			return
		}
	}
}

// act carries out the blamer's verdict: the waits it asks for, and the
// end of the job naming its cause.
func (j *job) act(v verdict) {
	if v.expire >= 0 {
		r := v.expire
		j.timers = append(j.timers, time.AfterFunc(lostWait, func() { j.expired <- r }))
	}
	if v.settle {
		t := time.NewTimer(settleWait)
		j.timers = append(j.timers, t)
		j.settle = t.C
	}
	if v.blame < 0 {
		return
	}
	p := j.pes[v.blame]
	switch v.why {
	case whyLostRunning:
		j.end(fmt.Sprintf("%s was lost by the bootstrap store (%s) but is still running", p.who(), p.lost), v.code)
	case whyFailedFirst:
		// The verbose output said how it exited just before.
		j.end(fmt.Sprintf("%s failed first (%s)", p.who(), p.shortWhat()), v.code)
	case whyExited:
		j.end(fmt.Sprintf("%s %s", p.who(), p.what), v.code)
	case whyZeroUnfinished:
		j.end(fmt.Sprintf("%s exited with status 0 without finalizing (%s)", p.who(), p.lost), v.code)
	}
}

// end starts ending the job because of cause, whose exit code the job
// takes: every PE still running gets SIGTERM now and SIGKILL after the
// grace period.
func (j *job) end(cause string, code int) {
	if j.cause != "" {
		return
	}
	j.cause, j.code = cause, code
	if j.blame != nil {
		j.blame.ended()
	}
	others := 0
	for _, p := range j.pes {
		if !p.exited {
			others++
		}
	}
	if others > 0 {
		j.logf(true, "%s; terminating the job (%d PEs still running)", cause, others)
	} else {
		j.logf(true, "%s", cause)
	}
	if j.o.Grace < 0 {
		j.signal(syscall.SIGKILL)
		return
	}
	j.signal(syscall.SIGTERM)
	t := time.NewTimer(j.o.Grace)
	j.timers = append(j.timers, t)
	j.killAt = t.C
}

// signal sends sig to the process group of every PE that has not been
// reaped (a reaped PE's pid may be reused).
func (j *job) signal(sig syscall.Signal) {
	for _, p := range j.pes {
		if p.exited || p.cmd == nil {
			continue
		}
		if err := syscall.Kill(-p.pid, sig); err != nil {
			// It left its process group: signal it alone.
			p.cmd.Process.Signal(sig)
		}
	}
	name := map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGKILL: "KILL"}[sig]
	for _, a := range j.agents {
		for _, r := range a.ranks {
			if !j.pes[r].exited {
				a.send(name) // its agent signals all of them
				break
			}
		}
	}
}

// describe says how a PE ended and gives the matching exit code, and
// whether a signal killed it.
func describe(state *os.ProcessState, err error) (string, int, bool) {
	if state == nil {
		return fmt.Sprintf("could not be waited for: %v", err), 1, false
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		return fmt.Sprintf("was killed by signal %d (%v)", int(sig), sig), 128 + int(sig), true
	}
	code := state.ExitCode()
	return fmt.Sprintf("exited with status %d", code), code, false
}

// logf writes one launcher line to Stderr when show is true.
func (j *job) logf(show bool, format string, a ...any) {
	if !show {
		return
	}
	j.stderr.Write([]byte("oshrun: " + fmt.Sprintf(format, a...) + "\n"))
}
