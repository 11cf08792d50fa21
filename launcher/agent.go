package launcher

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
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

// AgentFlag is the argument that makes oshrun an agent: the launcher runs
// "LAUNCH-AGENT --agent" on each remote host through the rsh command.
const AgentFlag = "--agent"

// agentProto numbers the agent protocol; launcher and agent must agree.
const agentProto = 2

// agentSpec is what the launcher tells an agent, as one JSON line on the
// agent's standard input (never on a command line: it holds the secret).
// Lines that follow are commands: "TERM" and "KILL" signal every PE the
// agent runs; the end of input ends the job on that host.
type agentSpec struct {
	Proto   int
	JobID   string
	Size    int
	Ranks   []int
	Program string
	Args    []string
	// Env holds the KEY=VALUE pairs the launcher forwards; the PEs get
	// the agent's own environment (the remote login's) plus these.
	Env []string
	// StoreHost is the store's address as this host must dial it; empty
	// means the address the rsh connection came from (SSH_CONNECTION).
	StoreHost string
	StorePort int
	Secret    string // hex
	Grace     time.Duration
	CPUBind   Binding
}

// maxSpec bounds the spec line an agent reads.
const maxSpec = 1 << 20

func (s *agentSpec) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("agent: job description: "+format+": %w", append(a, core.ErrInvalid)...)
	}
	switch {
	case s.Proto != agentProto:
		return bad("protocol %d, this oshrun speaks %d (oshrun must be the same build on every host)", s.Proto, agentProto)
	case s.Size < 1 || s.Size > maxSlots*64:
		return bad("job size %d", s.Size)
	case len(s.Ranks) == 0 || len(s.Ranks) > s.Size:
		return bad("%d ranks for a job of %d", len(s.Ranks), s.Size)
	case !filepath.IsAbs(s.Program):
		return bad("program %q is not an absolute path", s.Program)
	case s.StorePort < 1 || s.StorePort > 65535:
		return bad("store port %d", s.StorePort)
	}
	if s.CPUBind != "" {
		if _, err := ParseBinding(string(s.CPUBind)); err != nil {
			return bad("CPU binding: %v", err)
		}
	}
	seen := map[int]bool{}
	for _, r := range s.Ranks {
		if r < 0 || r >= s.Size || seen[r] {
			return bad("rank %d of a job of %d (or given twice)", r, s.Size)
		}
		seen[r] = true
	}
	for _, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return bad("environment entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

// storeHostFromSSH is the client address of the ssh connection this
// process runs under: the launcher's host as this host reaches it.
func storeHostFromSSH(lookup func(string) (string, bool)) string {
	v, ok := lookup("SSH_CONNECTION")
	if !ok {
		return ""
	}
	host, _, _ := strings.Cut(v, " ")
	if net.ParseIP(host) == nil {
		return ""
	}
	return host
}

// RunAgent is oshrun on a remote host: it reads a job description from
// in, starts the PEs it names on this host, reports their output and exits
// on out as frames, and ends them when the launcher says so or when in
// ends (the launcher or its connection died). It returns once every PE it
// started has exited and the host's job files are removed. Problems of its
// own go to errw, which the rsh command carries to the launcher's stderr.
func RunAgent(ctx context.Context, in io.Reader, out io.Writer, errw io.Writer) int {
	// As in Run: PEs die with the thread that started them (Pdeathsig).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// A launcher that died leaves out a broken pipe, and a Go program
	// writing its standard output there dies of SIGPIPE unless it handles
	// the signal: the agent must live on to end its PEs and remove the
	// host's job files. Handled (not ignored), the signal's default comes
	// back in the PEs it starts.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)

	fail := func(err error) int {
		fmt.Fprintf(errw, "oshrun agent on %s: %v\n", hostname(), err)
		return ExitUsage
	}
	br := bufio.NewReaderSize(in, 4096)
	line, err := readLine(br, maxSpec)
	if err != nil {
		return fail(fmt.Errorf("reading the job description: %w", err))
	}
	var spec agentSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fail(fmt.Errorf("job description: %v: %w", err, core.ErrInvalid))
	}
	if err := spec.check(); err != nil {
		return fail(err)
	}
	host := spec.StoreHost
	if host == "" {
		if host = storeHostFromSSH(os.LookupEnv); host == "" {
			return fail(fmt.Errorf("the launcher did not say where its store is and SSH_CONNECTION does not tell; give oshrun --bind with an address this host can reach: %w", core.ErrInvalid))
		}
	}
	if _, err := os.Stat(spec.Program); err != nil {
		return fail(fmt.Errorf("program: %w (every host must have it at the same path)", err))
	}
	env := peEnv(os.Environ(), spec.Env, len(spec.Ranks), spec.Size, spec.JobID, spec.Secret,
		net.JoinHostPort(host, strconv.Itoa(spec.StorePort)))
	lookup := envLookup(env)
	// Making the job's directory sweeps the dead jobs' first, once a
	// process, and an agent is a process of its own.
	jobDir, held := holdJobDir(lookup, spec.JobID)

	a := &agent{
		spec:   spec,
		env:    env,
		jobDir: jobDir,
		fw:     &frameWriter{w: out},
		exits:  make(chan int, len(spec.Ranks)),
		cmds:   make(chan string, 4),
	}
	go a.readCommands(br)
	code := a.run(ctx)
	_ = releaseJobDir(a.jobDir, held)
	_ = a.fw.write(frameDone, 0, nil)
	return code
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// readLine reads one line of at most max bytes, without its newline.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return nil, fmt.Errorf("line longer than %d bytes: %w", max, core.ErrInvalid)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("input ended before a whole line: %w", core.ErrInvalid)
		default:
			return nil, err
		}
	}
}

type agent struct {
	spec   agentSpec
	env    []string
	jobDir string
	fw     *frameWriter
	pes    []*exec.Cmd
	exits  chan int    // index into pes of a PE that has been waited for
	cmds   chan string // from the launcher: TERM, KILL, or EOF at its end
}

// readCommands passes the launcher's commands on; its input's end (or an
// error) is "EOF".
func (a *agent) readCommands(br *bufio.Reader) {
	for {
		line, err := readLine(br, 64)
		if err != nil {
			a.cmds <- "EOF"
			return
		}
		a.cmds <- string(line)
	}
}

func (a *agent) run(ctx context.Context) int {
	var sets [][]int
	if cpus, err := sys.CPUs(); err == nil {
		sets = cpuSets(a.spec.CPUBind, cpus, len(a.spec.Ranks))
	}
	running := 0
	for i, r := range a.spec.Ranks {
		cmd := exec.Command(a.spec.Program, a.spec.Args...)
		cmd.Env = append(slices.Clip(a.env), bootstrap.EnvRank+"="+strconv.Itoa(r))
		cmd.Stdout = peStream{a.fw, frameStdout, r}
		cmd.Stderr = peStream{a.fw, frameStderr, r}
		cmd.SysProcAttr = procAttr()
		cmd.WaitDelay = waitDelay
		var set []int
		if sets != nil {
			set = sets[i]
		}
		err := sys.OnCPUs(set, cmd.Start)
		if err != nil {
			// The PEs already started end with the job, which the
			// launcher ends on this exit.
			_ = a.fw.write(frameStderr, r, []byte(fmt.Sprintf("oshrun agent on %s: starting PE %d: %v\n", hostname(), r, err)))
			_ = a.fw.write(frameExit, r, exitPayload(127, false, "could not be started: "+err.Error()))
			for _, rest := range a.spec.Ranks[i+1:] {
				_ = a.fw.write(frameExit, rest, exitPayload(1, false, "was not started: PE "+strconv.Itoa(r)+" could not be"))
			}
			break
		}
		a.pes = append(a.pes, cmd)
		running++
		_ = a.fw.write(frameStarted, r, []byte(strconv.Itoa(cmd.Process.Pid)))
		go func() {
			_ = cmd.Wait()
			a.exits <- i
		}()
	}
	exited := make([]bool, len(a.pes))
	signal := func(sig syscall.Signal) {
		for i, cmd := range a.pes {
			if !exited[i] {
				if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
					_ = cmd.Process.Signal(sig)
				}
			}
		}
	}
	var killAt <-chan time.Time
	ending := func() {
		if killAt != nil {
			return
		}
		if a.spec.Grace < 0 {
			signal(syscall.SIGKILL)
			killAt = make(chan time.Time) // never: already killed
			return
		}
		signal(syscall.SIGTERM)
		killAt = time.After(a.spec.Grace)
	}
	cmds := a.cmds
	done := ctx.Done()
	globalSent := false
	// The launcher cannot see this host's processes: the agent tells it
	// when one is stopped by a signal, or runs again, and the launcher
	// decides when a stopped PE is lost.
	stopped := make([]bool, len(a.pes))
	watch := time.NewTicker(stopPoll)
	defer watch.Stop()
	for running > 0 {
		select {
		case <-watch.C:
			for i, cmd := range a.pes {
				if exited[i] {
					continue
				}
				if s := procstate.Stopped(cmd.Process.Pid); s != stopped[i] {
					stopped[i] = s
					_ = a.fw.write(frameStopped, a.spec.Ranks[i], stoppedPayload(s))
				}
			}
		case i := <-a.exits:
			exited[i] = true
			running--
			if !globalSent {
				// A PE that called global_exit recorded it in the host's
				// job directory before telling anyone: the launcher ends
				// the job with its status, as for its own PEs.
				if rec, ok := globalexit.ReadRecord(a.jobDir); ok {
					globalSent = true
					_ = a.fw.write(frameGlobalExit, rec.PE, append(binary.BigEndian.AppendUint32(nil, uint32(int32(rec.Status))), rec.Reason...))
				}
			}
			what, code, signaled := describe(a.pes[i].ProcessState, nil)
			_ = a.fw.write(frameExit, a.spec.Ranks[i], exitPayload(code, signaled, what))
		case c := <-cmds:
			switch c {
			case "TERM":
				signal(syscall.SIGTERM)
			case "KILL":
				signal(syscall.SIGKILL)
			default: // the launcher is gone (EOF) or confused
				cmds = nil
				ending()
			}
		case <-done:
			done = nil
			ending()
		case <-killAt:
			killAt = make(chan time.Time)
			signal(syscall.SIGKILL)
		}
	}
	return 0
}
