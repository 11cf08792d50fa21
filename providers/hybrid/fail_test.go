package hybrid_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// A test binary started with envScenario runs one PE of a scenario in
// this process instead of the tests (see TestMain).
const (
	envScenario   = "GOSHMEM_HYBRID_TEST_SCENARIO"
	envPEsPerHost = "GOSHMEM_HYBRID_TEST_PES_PER_HOST"
)

// runScenario runs this process's PE of the named scenario and returns
// its exit code.
func runScenario(name string) int {
	rank, _ := strconv.Atoi(os.Getenv(bootstrap.EnvRank))
	per, _ := strconv.Atoi(os.Getenv(envPEsPerHost))
	if per < 1 {
		per = 1
	}
	var err error
	switch name {
	case "lost":
		err = lostScenario(rank, fmt.Sprintf("host-%d", rank/per))
	case "lost-on-real-hosts":
		// Started as srun would (see nsHosts), on hosts that tell
		// themselves apart.
		rank, _ = strconv.Atoi(os.Getenv(bootstrap.EnvSlurmRank))
		err = lostScenario(rank, "")
	default:
		err = fmt.Errorf("no scenario %q", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scenario %s, PE %d: %v\n", name, rank, err)
		return 1
	}
	return 0
}

// lostScenario: the last PE says it is ready and waits to be killed;
// every other PE runs barriers and gets from every PE until one fails,
// says how, and leaves without finalizing (the job cannot finalize).
func lostScenario(rank int, host string) error {
	w, err := shmem.Init(shmem.WithHostID(host))
	if err != nil {
		return err
	}
	fmt.Printf("provider %s\n", w.Provider())
	buf, err := shmem.Malloc[int64](w, 1)
	if err != nil {
		return err
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	if rank == w.NPEs()-1 {
		fmt.Println("ready")
		select {} // until the test kills this process
	}
	for err == nil {
		for pe := range w.NPEs() {
			if _, err = shmem.G(w, &buf[0], pe); err != nil {
				break
			}
		}
		if err == nil {
			err = w.BarrierAll()
		}
	}
	fmt.Printf("error: %v\n", err)
	// Stay until the test has every PE's error (it closes our input; one
	// started without an input reads none): a PE that left now could be
	// reported lost by one that has not failed yet.
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
	return nil
}

// syncBuf is a bytes.Buffer that a child's output goroutine writes while
// the test reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A PE killed on one of two hosts (2 PEs each, separate processes, tcp
// between the hosts): every other PE, the one on its host included,
// errors within the bound instead of waiting for it.
func TestPEKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	const n, per = 4, 2
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	secret := make([]byte, 16)
	srv := bootstrap.NewServer(ln, n, secret)
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	defer func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-served)
	}()
	jobID, err := bootstrap.NewJobID()
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shm := t.TempDir()
	outs := make([]syncBuf, n)
	cmds := make([]*exec.Cmd, n)
	stdins := make([]io.WriteCloser, n)
	for rank := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			envScenario+"=lost",
			envPEsPerHost+"="+strconv.Itoa(per),
			bootstrap.EnvRank+"="+strconv.Itoa(rank),
			bootstrap.EnvSize+"="+strconv.Itoa(n),
			bootstrap.EnvJobID+"="+jobID,
			bootstrap.EnvBootstrap+"="+ln.Addr().String(),
			bootstrap.EnvSecret+"="+hex.EncodeToString(secret),
			core.EnvProvider+"=tcp",
			core.EnvShmDir+"="+shm,
			"GOSHMEM_TCP_TIMEOUT=5s",
			"GORACE=atexit_sleep_ms=0")
		cmd.Stdout, cmd.Stderr = &outs[rank], &outs[rank]
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdins[rank] = stdin
		require.NoError(t, cmd.Start())
		cmds[rank] = cmd
	}
	victim := cmds[n-1]
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	require.Eventually(t, func() bool { return strings.Contains(outs[n-1].String(), "ready") },
		time.Minute, 10*time.Millisecond, "the last PE never got ready:\n%s", &outs[n-1])
	require.Contains(t, outs[0].String(), "provider tcp+loopback")

	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	require.Eventually(t, func() bool {
		for rank := range n - 1 {
			if !strings.Contains(outs[rank].String(), "error: ") {
				return false
			}
		}
		return true
	}, time.Minute, time.Millisecond, "every PE errors")
	for rank := range n - 1 {
		require.NoError(t, stdins[rank].Close())
		err := cmds[rank].Wait()
		require.NoError(t, err, "PE %d:\n%s", rank, &outs[rank])
		require.Contains(t, outs[rank].String(), fmt.Sprintf("PE %d", n-1), "PE %d names the lost PE", rank)
		t.Logf("PE %d: %s", rank, strings.TrimSpace(outs[rank].String()))
	}
	t.Logf("every PE failed %v after the kill", time.Since(killed).Round(time.Millisecond))
}
