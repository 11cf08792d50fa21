package plugin_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/launcher"
	"github.com/goshmem/goshmem/shmem"
)

// envDeadPluginPE makes the test binary a PE of deadPluginPE's job; its
// value is the file whose making lets the PE exit.
const envDeadPluginPE = "GOSHMEM_PLUGIN_TEST_DEAD_PLUGIN_PE"

// deadPluginPE is a PE of a 3-PE job on the example plugin in which PEs 0
// and 2 wait in a barrier that PE 1 never enters, and PE 1 waits on
// memory nobody writes: each says "ready" first, and then nothing but the
// loss of a PE's plugin process ends its wait. It prints what its wait
// returned and exits with status 1, once the test has seen every PE's
// lines: the launcher ends a job whose PE failed, and a PE that exited at
// once could take with it another's report before it was written.
func deadPluginPE() int {
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 90
	}
	// flag[0] is what PE 1 waits on; flag[1] takes the puts after the
	// waits, so that none of them ends PE 1's wait as a write would.
	flag, err := shmem.Malloc[int64](w, 2)
	if err == nil {
		err = w.BarrierAll()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	me := w.MyPE()
	fmt.Printf("ready %d\n", me)
	if me == 1 {
		err = shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, 1)
	} else {
		err = w.BarrierAll()
	}
	fmt.Fprintf(os.Stderr, "PE %d: wait returned: %v\n", me, err)
	// The next operation fails at once, with the same cause.
	err = shmem.Put(w, flag[1:], []int64{1}, (me+1)%w.NPEs())
	fmt.Fprintf(os.Stderr, "PE %d: next put: %v\n", me, err)
	release := os.Getenv(envDeadPluginPE)
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(release); err == nil {
			break
		}
	}
	return 1
}

// readyWriter collects a job's output and closes ready once n lines
// holding mark have come.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	mark  string
	n     int
	ready chan struct{}
}

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if w.n > 0 && strings.Count(w.buf.String(), w.mark) >= w.n {
		w.n = 0
		close(w.ready)
	}
	return len(b), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestDeadPluginEndsTheJob kills the plugin process of a PE waiting in a
// barrier (PE 0, the root of the barrier's tree, then PE 2, a leaf) while
// the other PEs wait too: that PE's wait must fail with the loss naming
// the plugin, the others' with that PE lost, and the job must end within
// a bound, whichever PE it was.
func TestDeadPluginEndsTheJob(t *testing.T) {
	if testing.Short() {
		t.Skip("runs jobs of processes")
	}
	const np, bound = 3, 30 * time.Second
	for _, victim := range []int{0, 2} {
		t.Run(fmt.Sprintf("PE%d", victim), func(t *testing.T) {
			var mu sync.Mutex
			pids := map[int]int{}
			stdout := &readyWriter{mark: "ready ", n: np, ready: make(chan struct{})}
			stderr := &readyWriter{mark: "next put: ", n: np, ready: make(chan struct{})}
			release := filepath.Join(t.TempDir(), "release")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				code, err := launcher.Run(ctx, launcher.Options{NP: np, Program: os.Args[0], Args: []string{"-test.run=^$"},
					Provider: examplePlugin, Stdout: stdout, Stderr: stderr, Grace: time.Second,
					Env: []string{envDeadPluginPE + "=" + release, core.EnvShmDir + "=" + conformance.ShmDir(t), "GORACE=atexit_sleep_ms=0"},
					Started: func(pe, pid int) {
						mu.Lock()
						pids[pe] = pid
						mu.Unlock()
					}})
				done <- result{code, err}
			}()
			select {
			case <-stdout.ready:
			case r := <-done:
				t.Fatalf("the job ended before every PE was ready: %d, %v\n%s%s", r.code, r.err, stdout, stderr)
			case <-time.After(2 * bound):
				t.Fatalf("the PEs were not ready after %v:\n%s%s", 2*bound, stdout, stderr)
			}
			mu.Lock()
			pe := pids[victim]
			mu.Unlock()
			kids := children(pe)
			require.Len(t, kids, 1, "PE %d (pid %d) should have one child, its plugin", victim, pe)
			start := time.Now()
			require.NoError(t, syscall.Kill(kids[0], syscall.SIGKILL))
			// Every PE has reported: they may exit.
			go func() {
				select {
				case <-stderr.ready:
					if err := os.WriteFile(release, nil, 0o600); err != nil {
						t.Errorf("releasing the PEs: %v", err)
					}
				case <-ctx.Done():
				}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(bound):
				cancel()
				<-done
				t.Fatalf("the job still ran %v after PE %d's plugin process was killed:\n%s%s", bound, victim, stdout, stderr)
			}
			took := time.Since(start)
			out := stderr.String()
			t.Logf("job ended %v after the kill, status %d (%v):\n%s", took.Round(time.Millisecond), r.code, r.err, out)
			require.NotZero(t, r.code)
			// The PE whose plugin died names it; the others name that PE.
			require.Regexp(t, fmt.Sprintf(`PE %d: wait returned: .*plugin %s .*PE %d lost: its provider process, plugin %s .* is gone`,
				victim, examplePlugin, victim, examplePlugin), out)
			require.Regexp(t, fmt.Sprintf(`PE %d: next put: .*plugin %s .*PE %d lost`, victim, examplePlugin, victim), out)
			for other := range np {
				if other != victim {
					require.Regexp(t, fmt.Sprintf(`PE %d: wait returned: .*PE %d lost`, other, victim), out)
				}
			}
		})
	}
}
