package ntbring_test

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
	envScenario   = "GOSHMEM_NTBRING_TEST_SCENARIO"
	envPEsPerHost = "GOSHMEM_NTBRING_TEST_PES_PER_HOST"
	envVictim     = "GOSHMEM_NTBRING_TEST_VICTIM"
)

// runScenario runs this process's PE of the named scenario and returns
// its exit code.
func runScenario(name string) int {
	rank, _ := strconv.Atoi(os.Getenv(bootstrap.EnvRank))
	per, _ := strconv.Atoi(os.Getenv(envPEsPerHost))
	per = max(per, 1)
	var err error
	switch name {
	case "lost":
		victim, _ := strconv.Atoi(os.Getenv(envVictim))
		err = lostScenario(rank, victim, fmt.Sprintf("lanes-host-%d", rank/per))
	default:
		err = fmt.Errorf("no scenario %q", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "scenario %s, PE %d: %v\n", name, rank, err)
		return 1
	}
	return 0
}

// lostScenario: the victim says it is ready and waits to be killed;
// every other PE runs barriers and gets from every PE until one fails,
// says how, and leaves without finalizing (the job cannot finalize).
func lostScenario(rank, victim int, host string) error {
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
	if rank == victim {
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
	// Stay until the test has every PE's error: a PE that left now could
	// be reported lost by one that has not failed yet.
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

// A PE killed on one of two hosts of 2 PEs (separate processes, each
// PE the node of its lane of its host's emulated device, loopback inside
// the hosts): every other PE, on its host, on its lane and on the other
// lane, errors within the bound instead of waiting for it. The victim is
// the PE of lane 1, then that of lane 0, whose device files hold the
// link's words.
func TestLanesPEKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	for _, victim := range []int{3, 2} {
		t.Run(fmt.Sprintf("PE%d", victim), func(t *testing.T) { testLanesPEKilled(t, victim) })
	}
}

func testLanesPEKilled(t *testing.T, victimRank int) {
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
			envVictim+"="+strconv.Itoa(victimRank),
			bootstrap.EnvRank+"="+strconv.Itoa(rank),
			bootstrap.EnvSize+"="+strconv.Itoa(n),
			bootstrap.EnvJobID+"="+jobID,
			bootstrap.EnvBootstrap+"="+ln.Addr().String(),
			bootstrap.EnvSecret+"="+hex.EncodeToString(secret),
			core.EnvProvider+"=ntbring",
			core.EnvShmDir+"="+shm,
			"GOSHMEM_NTBRING_TIMEOUT=5s",
			"GOSHMEM_NTB_MODEL=off",
			"GORACE=atexit_sleep_ms=0")
		cmd.Stdout, cmd.Stderr = &outs[rank], &outs[rank]
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdins[rank] = stdin
		require.NoError(t, cmd.Start())
		cmds[rank] = cmd
	}
	victim := cmds[victimRank]
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	require.Eventually(t, func() bool { return strings.Contains(outs[victimRank].String(), "ready") },
		time.Minute, 10*time.Millisecond, "the victim never got ready:\n%s", &outs[victimRank])
	require.Contains(t, outs[0].String(), "provider ntbring+loopback")

	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	require.Eventually(t, func() bool {
		for rank := range n {
			if rank != victimRank && !strings.Contains(outs[rank].String(), "error: ") {
				return false
			}
		}
		return true
	}, time.Minute, time.Millisecond, "every PE errors")
	took := time.Since(killed)
	for rank := range n {
		if rank == victimRank {
			continue
		}
		require.NoError(t, stdins[rank].Close())
		err := cmds[rank].Wait()
		require.NoError(t, err, "PE %d:\n%s", rank, &outs[rank])
		require.Contains(t, outs[rank].String(), fmt.Sprintf("PE %d", victimRank), "PE %d names the lost PE", rank)
		t.Logf("PE %d: %s", rank, strings.TrimSpace(outs[rank].String()))
	}
	t.Logf("every PE failed within %v of the kill", took.Round(time.Millisecond))
	require.Less(t, took, 30*time.Second, "every PE fails within the bound")
}
