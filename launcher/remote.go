package launcher

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/globalexit"
)

// EnvRsh names the command that runs a command on another host, as Open
// MPI's plm_rsh_agent: its words, then the host, then the command. The
// default is "ssh". It must not ask for a password: there is no terminal.
const EnvRsh = "GOSHMEM_RSH"

// DefaultRsh is the rsh command when GOSHMEM_RSH is not set.
const DefaultRsh = "ssh"

// forwardedPrefixes are the variables of the launcher's environment that
// PEs on other hosts get too (as Open MPI forwards OMPI_*): goshmem's and
// OpenSHMEM's settings. Others reach them only when named with -x.
var forwardedPrefixes = []string{"GOSHMEM_", "SHMEM_"}

// rshParam is EnvRsh, in the registry (core.Declare).
var rshParam = core.Declare(core.Param{Env: EnvRsh, Default: DefaultRsh,
	Help: "oshrun across hosts: the command that runs a command on another host, with its arguments (ssh -p 2222)"})[0]

// rshCommand is the rsh command's words from the environment.
func rshCommand(lookup func(string) (string, bool)) ([]string, error) {
	v, ok := rshParam.Raw(lookup)
	if !ok {
		return []string{DefaultRsh}, nil
	}
	words := strings.Fields(v)
	if len(words) == 0 {
		return nil, fmt.Errorf("%s=%q names no command; want a command such as \"ssh\" or \"ssh -p 2222\": %w", EnvRsh, v, core.ErrInvalid)
	}
	return words, nil
}

// remoteEnv is what PEs on other hosts get on top of their login's
// environment: the forwarded variables of this one, the -x exports, then
// opts.Env and the provider.
func (o Options) remoteEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		forward := false
		for _, p := range forwardedPrefixes {
			forward = forward || strings.HasPrefix(k, p)
		}
		for _, x := range o.Export {
			forward = forward || k == x
		}
		if forward && k != EnvRsh {
			env = append(env, kv)
		}
	}
	return append(env, o.extraEnv()...)
}

// sourceIP is the address of this host that traffic to host leaves from,
// or "" when host does not resolve here (then the agent takes it from
// SSH_CONNECTION). No packet is sent: a UDP "connection" only routes.
func sourceIP(host string) string {
	c, err := net.Dial("udp", net.JoinHostPort(host, "9"))
	if err != nil {
		return ""
	}
	defer c.Close()
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsLoopback() {
		return a.IP.String()
	}
	return ""
}

// agentConn is the launcher's end of one remote host's agent.
type agentConn struct {
	host  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ranks []int

	mu     sync.Mutex // guards writes to stdin
	closed bool

	errTail tail // the last of what the agent and the rsh command said
	gone    chan struct{}
}

// remoteMsg is what an agent's reader tells the launcher's loop.
type remoteMsg struct {
	agent *agentConn
	rank  int
	pid   int         // > 0: the PE started with this pid
	exit  *exitReport // the PE exited
	done  bool        // the agent ended; err says how, if it ended badly
	// globalExit is the status rank gave global_exit, and why the library
	// ended the job if it was the library's.
	globalExit *globalexit.Record
	// stopped says the PE's process was stopped by a signal (true) or
	// runs again (false).
	stopped *bool
	err     error
}

// startAgent starts the agent for host's ranks and sends it the job.
// The ranks' output goes to the job's writers; what the agent reports
// arrives on j.remote.
func (j *job) startAgent(host string, ranks []int, spec agentSpec) (*agentConn, error) {
	args := append(append(append([]string(nil), j.rsh[1:]...), host), j.launchAgent...)
	args = append(args, AgentFlag)
	cmd := exec.Command(j.rsh[0], args...)
	cmd.SysProcAttr = procAttr()
	a := &agentConn{host: host, cmd: cmd, ranks: ranks, gone: make(chan struct{})}
	cmd.Stderr = &a.errTail
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("the rsh command %q: %w", j.rsh[0], err)
	}
	a.stdin = stdin
	spec.Ranks = ranks
	line, err := json.Marshal(spec)
	if err == nil {
		_, err = stdin.Write(append(line, '\n'))
	}
	if err != nil {
		// The reader below reports the agent's end with what it said.
		a.close()
	}
	go j.readAgent(a, stdout)
	return a, nil
}

// send writes a command to the agent; a dead agent is reported by its
// reader, so errors are dropped here.
func (a *agentConn) send(cmd string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		_, _ = io.WriteString(a.stdin, cmd+"\n")
	}
}

// close ends the agent's input: it ends what still runs and exits.
func (a *agentConn) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		_ = a.stdin.Close()
	}
}

// readAgent decodes the agent's frames until its stream ends, then reaps
// it and says so on j.remote.
func (j *job) readAgent(a *agentConn, r io.Reader) {
	defer close(a.gone)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	var ferr error
	mine := map[int]bool{}
	for _, rk := range a.ranks {
		mine[rk] = true
	}
	sawDone := false
	for !sawDone {
		var f frame
		f, buf, ferr = readFrame(br, buf)
		if ferr != nil {
			if errors.Is(ferr, io.EOF) {
				ferr = nil
			}
			break
		}
		if f.kind != frameDone && !mine[f.rank] {
			ferr = fmt.Errorf("agent sent a frame for PE %d, which is not one of its PEs %v: %w", f.rank, a.ranks, core.ErrInvalid)
			break
		}
		switch f.kind {
		case frameStarted:
			pid, err := strconv.Atoi(string(f.payload))
			if err != nil || pid <= 0 {
				ferr = fmt.Errorf("agent sent pid %q for PE %d: %w", f.payload, f.rank, core.ErrInvalid)
				break
			}
			j.remote <- remoteMsg{agent: a, rank: f.rank, pid: pid}
		case frameStdout, frameStderr:
			w := j.pes[f.rank].stdout
			if f.kind == frameStderr {
				w = j.pes[f.rank].stderr
			}
			_, _ = w.Write(f.payload)
		case frameExit:
			code, signaled, what, err := parseExit(f.payload)
			if err != nil {
				ferr = err
				break
			}
			j.remote <- remoteMsg{agent: a, rank: f.rank, exit: &exitReport{rank: f.rank, what: what, code: code, signaled: signaled}}
		case frameDone:
			sawDone = true
		case frameGlobalExit:
			if len(f.payload) < 4 {
				ferr = fmt.Errorf("agent sent a %d-byte global exit frame; it holds at least 4: %w", len(f.payload), core.ErrInvalid)
				break
			}
			rec := globalexit.Record{PE: f.rank, Status: int(int32(binary.BigEndian.Uint32(f.payload))),
				Reason: globalexit.CleanReason(string(f.payload[4:]))}
			j.remote <- remoteMsg{agent: a, rank: f.rank, globalExit: &rec}
		case frameStopped:
			if f.payload[0] > 1 {
				ferr = fmt.Errorf("agent sent stopped state %d for PE %d; 0 and 1 are allowed: %w", f.payload[0], f.rank, core.ErrInvalid)
				break
			}
			stopped := f.payload[0] == 1
			j.remote <- remoteMsg{agent: a, rank: f.rank, stopped: &stopped}
		}
		if ferr != nil {
			break
		}
	}
	if ferr != nil {
		// A confused agent is ended like a dead one.
		_ = a.cmd.Process.Kill()
	}
	// The agent has said all it will: reap it (bounded: it exits once its
	// PEs have, or was killed above).
	a.close()
	werr := waitBounded(a.cmd, waitDelay)
	switch {
	case ferr != nil:
	case !sawDone && werr != nil:
		ferr = fmt.Errorf("the agent (%s) ended: %v", strings.Join(a.cmd.Args, " "), werr)
	case !sawDone:
		ferr = fmt.Errorf("the agent (%s) ended before its PEs did", strings.Join(a.cmd.Args, " "))
	}
	if ferr != nil {
		if t := a.errTail.String(); t != "" {
			ferr = fmt.Errorf("%w; it said: %s", ferr, t)
		}
	}
	j.remote <- remoteMsg{agent: a, done: true, err: ferr}
}

// waitBounded waits for cmd, killing it if it has not exited within d.
func waitBounded(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return <-done
	}
}

// tail keeps the last few lines written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 1024

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(strings.Fields(string(bytes.ToValidUTF8(t.buf, []byte("?")))), " ")
}

// agentSpecFor is the job description every agent gets, but its ranks.
func (j *job) agentSpecFor(host string, storePort int) agentSpec {
	storeHost := j.bindHost
	if storeHost == "" {
		storeHost = sourceIP(host)
	}
	return agentSpec{
		Proto:     agentProto,
		JobID:     j.jobID,
		Size:      j.o.NP,
		Program:   j.path,
		Args:      j.o.Args,
		Env:       j.o.remoteEnv(),
		StoreHost: storeHost,
		StorePort: storePort,
		Secret:    hex.EncodeToString(j.secret),
		Grace:     j.o.Grace,
		CPUBind:   j.o.CPUBind,
	}
}
