package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/goshmem/goshmem/core"
)

// EnvStartTimeout bounds the start of every plugin: from exec to the end
// of the handshake and its answer to what it offers.
const EnvStartTimeout = "GOSHMEM_PLUGIN_START_TIMEOUT"

const (
	defaultStartTimeout = 5 * time.Second
	minStartTimeout     = 10 * time.Millisecond
	maxStartTimeout     = 10 * time.Minute
)

// startTimeoutParam is EnvStartTimeout, in the registry (core.Declare).
var startTimeoutParam = core.Declare(core.Param{Env: EnvStartTimeout, Kind: core.KindDuration, Default: defaultStartTimeout.String(),
	Help: "longest wait for a plugin provider to start and say what it offers; one that takes longer is killed with its children and the open fails"})[0]

// startTimeout reads EnvStartTimeout from lookup.
func startTimeout(lookup func(string) (string, bool)) (time.Duration, error) {
	return startTimeoutParam.Duration(lookup, minStartTimeout, maxStartTimeout)
}

// maxHandshakeOutput bounds what is read from a plugin's stdout. A Go
// plugin writes one handshake line there and then moves its stdout
// elsewhere; a program that floods it is cut off instead of being read
// for ever.
const maxHandshakeOutput = 64 << 10

// groupRunner runs a plugin executable in a process group of its own, so
// that killing it kills whatever it started too: a script that runs
// sleep as a child would otherwise leave the child holding the stdout
// pipe, and go-plugin, which reads that pipe to its end before it
// reaps the plugin, would wait for ever. Kill also closes the pipes, so
// no reader waits on a child that left the group.
type groupRunner struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
	out            *limitedReader
	pid            int

	killOnce sync.Once

	killed atomic.Bool // Kill was called: a SIGKILL after it was ours

	mu    sync.Mutex
	ended string // how the process ended on its own, once reaped: "exited with status 3"
}

var _ runner.Runner = (*groupRunner)(nil)

// newRunner makes the runner go-plugin starts for path; spec carries the
// environment go-plugin prepared (cookie, versions, socket directory).
func newRunner(path string, spec *exec.Cmd) (*groupRunner, error) {
	cmd := exec.Command(path)
	cmd.Env = spec.Env
	if _, ok := os.LookupEnv("GORACE"); !ok {
		// A race-built plugin would otherwise linger a second at exit.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := &groupRunner{cmd: cmd}
	var err error
	if r.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if r.stderr, err = cmd.StderrPipe(); err != nil {
		return nil, err
	}
	r.out = &limitedReader{r: r.stdout, left: maxHandshakeOutput}
	return r, nil
}

func (r *groupRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.pid = r.cmd.Process.Pid
	return nil
}

// Wait reaps the plugin, then kills what is left of its group: children
// of a plugin that exited must not outlive it.
func (r *groupRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	if !r.killed.Load() || !killedBy(r.cmd.ProcessState, syscall.SIGKILL) {
		r.mu.Lock()
		r.ended = howEnded(r.cmd.ProcessState, err)
		r.mu.Unlock()
	}
	r.killGroup()
	return err
}

// howEnded returns how the reaped process ended on its own, or "" before
// that or when Kill ended it.
func (r *groupRunner) howEnded() string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

// killedBy reports whether sig killed the process.
func killedBy(st *os.ProcessState, sig syscall.Signal) bool {
	if st == nil {
		return false
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// howEnded says how a process ended: its exit status, or the signal that
// killed it.
func howEnded(st *os.ProcessState, err error) string {
	if st == nil {
		return fmt.Sprintf("could not be waited for (%v)", err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}

// Kill kills the plugin's whole process group and closes its pipes.
func (r *groupRunner) Kill(context.Context) error {
	r.killed.Store(true)
	r.killGroup()
	r.killOnce.Do(func() {
		r.stdout.Close()
		r.stderr.Close()
	})
	return nil
}

func (r *groupRunner) killGroup() {
	if r.pid > 0 {
		_ = syscall.Kill(-r.pid, syscall.SIGKILL)
	}
}

func (r *groupRunner) Stdout() io.ReadCloser { return r.out }
func (r *groupRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *groupRunner) Name() string          { return r.cmd.Path }
func (r *groupRunner) Diagnose(context.Context) string {
	return "is it a goshmem plugin, built for this machine?"
}

func (r *groupRunner) ID() string {
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (*groupRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (*groupRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// limitedReader reads at most left bytes, then closes the pipe (a plugin
// still writing gets EPIPE) and reports the end.
type limitedReader struct {
	r    io.ReadCloser
	mu   sync.Mutex
	left int
}

func (l *limitedReader) Read(b []byte) (int, error) {
	l.mu.Lock()
	left := l.left
	l.mu.Unlock()
	if left <= 0 {
		l.r.Close()
		return 0, io.EOF
	}
	if len(b) > left {
		b = b[:left]
	}
	n, err := l.r.Read(b)
	l.mu.Lock()
	l.left -= n
	l.mu.Unlock()
	if errors.Is(err, os.ErrClosed) {
		err = io.EOF // closed by Kill
	}
	return n, err
}

func (l *limitedReader) Close() error { return l.r.Close() }

// runnerFunc is go-plugin's hook for starting path with a groupRunner;
// made is told of the runner, for what it learns of the process's end.
func runnerFunc(path string, made func(*groupRunner)) func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error) {
	return func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
		r, err := newRunner(path, spec)
		if err != nil {
			return nil, fmt.Errorf("preparing %s: %w", path, err)
		}
		made(r)
		return r, nil
	}
}
