package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/launcher"
	"github.com/goshmem/goshmem/shmem"
)

// stoppedPE is a PE of a job in which PE args[0] stops itself (SIGSTOP)
// after a first barrier, while the others wait for it in a second one.
// Its process lives on, so only the transport can tell it is gone. The
// others say what the barrier and their Finalize returned, and how long
// Finalize took.
func stoppedPE(rank int, args []string) int {
	victim, _ := strconv.Atoi(args[0])
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	defer w.Finalize()
	if err := w.BarrierAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	if rank == victim {
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		// The stop may take effect a moment after the signal is sent:
		// nothing of the job may run in that moment.
		time.Sleep(time.Hour)
		return 92
	}
	return reportFinalize(w, rank, w.BarrierAll())
}

// killedPE is a PE of a job in which PE args[0] kills itself (SIGKILL)
// after a first barrier, while the others wait on memory nobody writes.
// They leave with status 1 the moment the wait reports the loss, as a
// program that checks its errors does: the quickest a consequence can
// reach the launcher.
func killedPE(rank int, args []string) int {
	victim, _ := strconv.Atoi(args[0])
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	flag, err := shmem.Malloc[int64](w, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	if err := w.BarrierAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	if rank == victim {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // not reached
	}
	err = shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, 1)
	fmt.Fprintf(os.Stderr, "PE %d: %v\n", rank, err)
	return 1
}

// A PE that stops (its process alive, its store connection open) is lost
// to the others once the ring notices: their barrier fails, their
// Finalize then returns with the error within a bound instead of waiting
// at a closing barrier for the stopped PE, and oshrun ends the job naming
// the stopped PE, which it kills.
func TestStoppedPEIsLostAndFinalizeReturns(t *testing.T) {
	t.Setenv(peEnv, "stopped")
	// The ring declares a silent neighbour dead after this; kept above
	// what a loaded machine may take to schedule a PE's heartbeat.
	t.Setenv("GOSHMEM_NTB_DEAD_AFTER", "2s")
	for _, tc := range []struct {
		provider string
		np       int
	}{{"ntbring", 3}} {
		t.Run(tc.provider, func(t *testing.T) {
			const victim = 1
			t.Setenv(core.EnvShmDir, t.TempDir())
			// A hung job is interrupted, and fails the test, rather than
			// hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			code, stdout, stderr := runOshrunCtx(t, ctx, "-np", strconv.Itoa(tc.np), "-provider", tc.provider,
				"-grace", "1s", os.Args[0], strconv.Itoa(victim))
			took := time.Since(start)
			require.NotEqual(t, launcher.ExitInterrupted, code, "the job hung (%v):\n%s%s", took, stdout, stderr)
			require.Equal(t, launcher.ExitLost, code, "%s%s", stdout, stderr)
			require.Regexp(t, fmt.Sprintf(`oshrun: PE %d \(pid \d+\) was lost by the bootstrap store \(.+\) but is still running`, victim),
				stderr, stdout)
			for r := range tc.np {
				if r == victim {
					continue
				}
				require.Regexp(t, fmt.Sprintf(`PE %d: barrier: .*PE %d lost`, r, victim), stdout, stderr)
				m := regexp.MustCompile(fmt.Sprintf(`PE %d: finalize returned after (\d+)ms: (.*)`, r)).FindStringSubmatch(stdout)
				require.NotNil(t, m, "PE %d did not return from Finalize:\n%s%s", r, stdout, stderr)
				ms, _ := strconv.Atoi(m[1])
				require.Less(t, ms, 10_000, "PE %d's Finalize", r)
				require.Contains(t, m[2], "lost", "PE %d's Finalize reports the loss", r)
			}
			t.Logf("job ended after %v; finalize: %s", took.Round(time.Millisecond),
				strings.Join(regexp.MustCompile(`finalize returned after \d+ms`).FindAllString(stdout, -1), ", "))
		})
	}
}

// When a PE is killed, its death is the job's cause, whatever order the
// others' exits (with status 1, having seen the loss) and the store's
// report reach oshrun in: oshrun names the killed PE and exits 128+9.
// The race is narrow, so the jobs are many.
func TestKilledPEIsBlamedNotTheSurvivors(t *testing.T) {
	t.Setenv(peEnv, "killed")
	const np, jobs = 4, 24
	for i := range jobs {
		provider := []string{"loopback", "tcp"}[i%2]
		victim := (i / 2) % np
		t.Setenv(core.EnvShmDir, t.TempDir())
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		code, stdout, stderr := runOshrunCtx(t, ctx, "-np", strconv.Itoa(np), "-provider", provider,
			"-grace", "1s", os.Args[0], strconv.Itoa(victim))
		cancel()
		require.Equal(t, 128+int(syscall.SIGKILL), code, "job %d (%s, PE %d killed):\n%s%s", i, provider, victim, stdout, stderr)
		// The survivors may all have left before the launcher learns of
		// the kill; then there is no one left to terminate.
		require.Regexp(t, fmt.Sprintf(`oshrun: PE %d \(pid \d+\) was killed by signal 9 \(killed\)(; terminating the job|\n)`, victim),
			stderr, "job %d (%s)", i, provider)
	}
}

func runOshrunCtx(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}
