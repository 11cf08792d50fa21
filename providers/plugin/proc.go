package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// proc is one running plugin process, as the host sees it.
type proc struct {
	name, path string
	timeout    time.Duration // longest wait for one answer
	client     *goplugin.Client
	rpc        pb.ProviderClient
	stderr     *tail

	runMu sync.Mutex
	run   *groupRunner // the process's runner, once go-plugin made it
}

// start runs the plugin at path in a process group of its own and
// completes go-plugin's handshake (cookie, protocol version, mutual TLS)
// within startTimeout; after that, timeout bounds each answer. go-plugin
// makes the directory for the plugin's socket in socketDir (the job
// directory, so that a PE that dies leaves nothing elsewhere; "" means
// the temporary directory) and removes it when the plugin is killed.
// maxSocketDir is the longest directory the plugin's socket may go under.
// A unix socket's path holds at most 107 bytes, and go-plugin adds about
// 40 below the directory it is given ("/plugin-dir" and "/plugin", each
// with a random number); a plugin whose socket path is longer cannot
// listen, and says nothing on its stdout but an empty handshake.
const maxSocketDir = 64

// socketBase is dir if a socket fits under it, else "" (the temporary
// directory, where go-plugin removes the socket when the plugin ends;
// only a PE that dies then leaves it there).
func socketBase(dir string) string {
	if len(dir) > maxSocketDir {
		return ""
	}
	return dir
}

func start(name, path string, startTimeout, timeout time.Duration, socketDir string) (*proc, error) {
	socketDir = socketBase(socketDir)
	p := &proc{name: name, path: path, timeout: timeout, stderr: &tail{}}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: versionedPlugins(nil),
		RunnerFunc: runnerFunc(path, func(r *groupRunner) {
			p.runMu.Lock()
			p.run = r
			p.runMu.Unlock()
		}),
		UnixSocketConfig: &goplugin.UnixSocketConfig{TempDir: socketDir},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     startTimeout,
		Stderr:           p.stderr,
		Logger:           hclog.NewNullLogger(),
	})
	cp, err := p.client.Client()
	if err == nil {
		var raw any
		raw, err = cp.Dispense(pluginName)
		if err == nil {
			var ok bool
			if p.rpc, ok = raw.(pb.ProviderClient); !ok {
				err = fmt.Errorf("dispensed %T", raw)
			}
		}
	}
	if err != nil {
		// A process that ended on its own before the kill crashed or
		// gave up: how it ended says more than its silence on stdout.
		// Looking costs a failed start a moment; its stderr drains
		// meanwhile.
		died := p.exited()
		p.client.Kill()
		p.exited() // let its stderr drain: a plugin that refuses says why there
		if died {
			p.stderr.settle(stderrSettle)
		}
		// go-plugin's own explanation runs over many lines; its first says what.
		why, _, _ := strings.Cut(err.Error(), "\n")
		if strings.Contains(why, "timeout while waiting for plugin to start") {
			return nil, p.fail("start", fmt.Errorf("no handshake within %v (%s); killed it and its children%s: %w",
				startTimeout, EnvStartTimeout, p.stderr.words(), core.ErrTimeout))
		}
		line, garbage := strings.CutPrefix(why, unrecognized)
		line = strings.TrimSpace(line)
		said := ""
		if garbage && line != "" {
			said = fmt.Sprintf("; its standard output began %q, which is no plugin handshake", clip(line))
		}
		if how := p.howEnded(); died && how != "" {
			return nil, p.fail("start", fmt.Errorf("the plugin process %s before its handshake%s%s: %w", how, said, p.stderr.words(), core.ErrInvalid))
		}
		if garbage {
			if said == "" {
				said = "; it closed its standard output without a handshake"
			}
			return nil, p.fail("start", fmt.Errorf("handshake failed%s (is it a goshmem plugin, built for this machine?)%s: %w", said, p.stderr.words(), core.ErrInvalid))
		}
		return nil, p.fail("start", fmt.Errorf("handshake failed: %s%s: %w", strings.TrimSpace(why), p.stderr.words(), core.ErrInvalid))
	}
	return p, nil
}

// unrecognized starts go-plugin's error for a first line of output that
// is no handshake: the empty line of a process that died first, too.
const unrecognized = "Unrecognized remote plugin message:"

// clip shortens what a plugin wrote for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// howEnded says how the process ended, or "" if it has not (or is not
// known to have).
func (p *proc) howEnded() string {
	p.runMu.Lock()
	r := p.run
	p.runMu.Unlock()
	return r.howEnded()
}

// kill ends the process; go-plugin asks it to exit, then kills it.
func (p *proc) kill() { p.client.Kill() }

// call bounds one unary call by the plugin's timeout.
func (p *proc) call(op string, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	if err := f(ctx); err != nil {
		return p.fail(op, err)
	}
	return nil
}

// fail turns what went wrong while talking to the plugin into an *Error
// naming it: a process that is gone is core.ErrPeerLost (with what it
// last wrote to stderr), an answer that did not come in time is
// core.ErrTimeout. Errors the caller classified already (garbage,
// timeouts) keep their kind; an *Error passes through.
func (p *proc) fail(op string, err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	switch {
	case errors.Is(err, core.ErrInvalid), errors.Is(err, core.ErrTimeout):
	case p.exited():
		how := p.howEnded()
		if how == "" {
			how = "died"
		}
		err = fmt.Errorf("the plugin process %s (%v)%s: %w", how, err, p.stderr.words(), core.ErrPeerLost)
	case status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("no answer within %v: %w", p.timeout, core.ErrTimeout)
	default:
		err = fmt.Errorf("connection to the plugin broke: %v: %w", err, core.ErrPeerLost)
	}
	return &Error{Name: p.name, Path: p.path, Op: op, Err: err}
}

// exited reports whether the process has ended, giving go-plugin a moment
// to notice: a broken connection usually arrives just before the exit.
func (p *proc) exited() bool {
	for range 50 {
		if p.client.Exited() {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// tail keeps the last of what a plugin wrote to its stderr, where a Go
// program's panic goes, for the error that reports its death.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 16 << 10

var _ io.Writer = (*tail)(nil)

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if n := len(t.buf); n > tailMax {
		t.buf = append(t.buf[:0], t.buf[n-tailMax:]...)
	}
	return len(b), nil
}

// stderrSettle bounds how long a failed start waits for a dead plugin's
// last words.
const stderrSettle = 100 * time.Millisecond

// settle waits, for at most max, until what a dead plugin wrote to its
// stderr has arrived: go-plugin copies it over in a goroutine of its
// own, which may not have run yet when the process's exit is seen. It
// returns once something has arrived and nothing more came for a few
// milliseconds; a plugin that wrote nothing costs the failed start max.
// The words are the best go-plugin allows, not a promise: its runner
// waits for the process, which closes the stderr pipe, while the copy may
// not have read the last of it, and what it had not read is lost.
func (t *tail) settle(max time.Duration) {
	last := -1
	for deadline := time.Now().Add(max); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		t.mu.Lock()
		n := len(t.buf)
		t.mu.Unlock()
		if n > 0 && n == last {
			return
		}
		last = n
	}
}

// words is the gist of the tail for an error message, or "": the last
// panic or fatal error line if there is one (the stack after it is long
// and says less), else the last few lines.
func (t *tail) words() string {
	t.mu.Lock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	t.mu.Unlock()
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "panic: ") || strings.HasPrefix(lines[i], "fatal error: ") {
			lines = lines[i : i+1]
			break
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return "; its stderr ended: " + strings.Join(lines, " | ")
}
