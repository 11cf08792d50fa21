package main_test

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/examples/internal/exampletest"
)

func TestRingshiftFourPEs(t *testing.T) {
	oshrun, ringshift := exampletest.Build(t, "github.com/goshmem/goshmem/examples/ringshift")
	cmd := exec.Command(oshrun, "-np", "4", ringshift, "-rounds", "1000")
	cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `ringshift: 4 PEs, 1000 rounds of 8192 bytes over loopback: verified`, string(out))
}

// A PE killed with SIGKILL in the middle of the job makes oshrun end the
// whole job, non-zero, naming the PE, well within 10 seconds.
func TestRingshiftKilledPEEndsJob(t *testing.T) {
	oshrun, ringshift := exampletest.Build(t, "github.com/goshmem/goshmem/examples/ringshift")
	cmd := exec.Command(oshrun, "-v", "-np", "4", ringshift, "-rounds", "100000000")
	cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()

	// Wait until every PE has joined the job, so the kill lands mid-run.
	pids := map[int]int{}
	var log bytes.Buffer
	pidLine := regexp.MustCompile(`PE (\d+): pid (\d+)`)
	sc := bufio.NewScanner(stderr)
	joined := 0
	for joined < 4 && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := pidLine.FindStringSubmatch(sc.Text()); m != nil {
			pe, _ := strconv.Atoi(m[1])
			pids[pe], _ = strconv.Atoi(m[2])
		}
		if regexp.MustCompile(`PE \d+ joined`).MatchString(sc.Text()) {
			joined++
		}
	}
	require.Equal(t, 4, joined, "PEs never joined:\n%s", log.String())
	victim := pids[2]
	require.NotZero(t, victim)

	killed := time.Now()
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	// Wait reads the rest of stderr after the process exits; the reader
	// ends when oshrun closes it.
	rest := make(chan struct{})
	go func() {
		defer close(rest)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
	}()
	done := make(chan error, 1)
	go func() { <-rest; done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "oshrun must exit non-zero")
		require.Less(t, time.Since(killed), 10*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatalf("oshrun still running 10s after PE 2 was killed")
	}
	require.Contains(t, log.String(), "PE 2")
	require.Contains(t, log.String(), "killed")
	for pe, pid := range pids {
		require.Error(t, syscall.Kill(pid, 0), "PE %d (pid %d) outlived the job", pe, pid)
	}
}

// A ring link that goes down while every PE still lives ends the job with
// the peer-lost error instead of leaving PEs waiting for data that can no
// longer come.
func TestRingshiftNTBLinkDownEndsJob(t *testing.T) {
	oshrun, ringshift := exampletest.Build(t, "github.com/goshmem/goshmem/examples/ringshift")
	// Should the job hang, the deadline ends oshrun, and its PEs with it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, oshrun, "-np", "5", ringshift, "-rounds", "100000000")
	cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir(), "GOSHMEM_PROVIDER=ntbring",
		"GOSHMEM_NTBRING_PROTOCOL=seed", "GOSHMEM_NTB_FAULT=link=2:down@500ms")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "oshrun must exit non-zero:\n%s", out)
	require.NoError(t, ctx.Err(), "the job hung:\n%s", out)
	require.Less(t, time.Since(start), 20*time.Second)
	require.Regexp(t, `ringshift: round \d+: .*lost`, string(out))
}
