package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	_ "github.com/goshmem/goshmem/providers/loopback"
	"github.com/goshmem/goshmem/shmem"
)

// The test binary plays two parts besides running the tests: oshrun itself
// (mainEnv set), and a PE (peEnv set and started by a launcher, so
// GOSHMEM_RANK is set).
const (
	mainEnv = "OSHRUN_TEST_MAIN"
	peEnv   = "OSHRUN_TEST_PE"
)

func TestMain(m *testing.M) {
	// Started by srun, a PE has SLURM_PROCID instead of GOSHMEM_RANK.
	if role := os.Getenv(peEnv); role != "" && (os.Getenv(bootstrap.EnvRank) != "" || os.Getenv("SLURM_PROCID") != "") {
		os.Exit(pe(role, os.Args[1:]))
	}
	if os.Getenv(mainEnv) != "" {
		main()
	}
	goleak.VerifyTestMain(m)
}

// extraRoles are the PE parts other test files add.
var extraRoles = map[string]func(rank int, args []string) int{}

func pe(role string, args []string) int {
	rank, _ := strconv.Atoi(os.Getenv(bootstrap.EnvRank))
	if f, ok := extraRoles[role]; ok {
		return f(rank, args)
	}
	switch role {
	case "args":
		fmt.Printf("rank %d args=%q provider=%q\n", rank, args, os.Getenv("GOSHMEM_PROVIDER"))
		return 0
	case "exit":
		if rank == 1 {
			return 5
		}
		return 0
	case "bootstrap":
		job, _, err := bootstrap.JobFromEnv(nil)
		if err != nil {
			return 90
		}
		b, err := bootstrap.Connect(job, 10*time.Second)
		if err != nil {
			return 91
		}
		if err := b.Barrier(); err != nil {
			return 92
		}
		fmt.Printf("PE %d done\n", rank)
		if err := b.Close(); err != nil {
			return 93
		}
		return 0
	case "globalexit": // a shmem job in which PE 1 calls global_exit(args[0])
		return globalExitPE(rank, args)
	case "globalexit-race":
		return globalExitRacePE(rank, args)
	case "globalexit-barrier":
		return globalExitBarrierPE(rank, args)
	case "stopped":
		return stoppedPE(rank, args)
	case "killed":
		return killedPE(rank, args)
	case "hang":
		fmt.Println("ready")
		time.Sleep(time.Hour)
	}
	return 99
}

func globalExitPE(rank int, args []string) int {
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	flag, err := shmem.Malloc[int64](w, 1)
	if err != nil || w.BarrierAll() != nil {
		return 91
	}
	if rank == 1 {
		status, _ := strconv.Atoi(args[0])
		w.GlobalExit(status)
		return 92 // not reached
	}
	// Nobody sets the flag: the PE waits until the launcher ends it, or
	// until the global exit reaches it first.
	err = shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, 1)
	fmt.Printf("PE %d: %v\n", rank, err)
	time.Sleep(time.Hour)
	return 93
}

func runOshrun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	// PEs built with -race would otherwise linger a second at exit.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "-np N is required"},
		{"np missing", []string{os.Args[0]}, "-np N is required"},
		{"np zero", []string{"-np", "0", os.Args[0]}, "at least 1 (got 0)"},
		{"np not a number", []string{"-np", "four", os.Args[0]}, "invalid value"},
		{"no program", []string{"-np", "2"}, "no PROGRAM given"},
		{"unknown flag", []string{"-np", "2", "-frobnicate", os.Args[0]}, "unknown flag -frobnicate"},
		{"bad grace", []string{"-np", "2", "-grace", "soon", os.Args[0]}, "invalid value"},
		{"negative grace", []string{"-np", "2", "-grace", "-1s", os.Args[0]}, "-grace -1s: want a duration from 0 (SIGKILL at once) to 1h0m0s"},
		{"grace too long", []string{"-np", "2", "-grace", "2h", os.Args[0]}, "-grace 2h0m0s: want a duration from 0"},
		{"negative stopped-after", []string{"-np", "2", "-stopped-after", "-5s", os.Args[0]}, "-stopped-after -5s: want 0 (never lose a stopped PE) or a duration up to 24h0m0s"},
		{"program not found", []string{"-np", "2", "goshmem-no-such-program"}, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runOshrun(t, tc.args...)
			require.Equal(t, 2, code)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tc.want)
			if tc.name != "program not found" {
				require.Contains(t, stderr, "usage: oshrun -np N")
			}
		})
	}
	code, _, stderr := runOshrun(t, "-h")
	require.Equal(t, 0, code)
	require.Contains(t, stderr, "usage: oshrun")
}

func TestProgramArgsPassThrough(t *testing.T) {
	t.Setenv(peEnv, "args")
	code, stdout, stderr := runOshrun(t, "-np", "2", "-tag", "-provider", "loopback", os.Args[0], "-rounds", "3", "-np", "9")
	require.Equal(t, 0, code, stderr)
	for r := range 2 {
		require.Contains(t, stdout, fmt.Sprintf(`[pe %d] rank %d args=["-rounds" "3" "-np" "9"] provider="loopback"`, r, r))
	}
}

func TestExitStatusIsTheJobs(t *testing.T) {
	t.Setenv(peEnv, "exit")
	code, _, stderr := runOshrun(t, "-n", "3", os.Args[0])
	require.Equal(t, 5, code)
	require.Regexp(t, `oshrun: PE 1 \(pid \d+\) exited with status 5`, stderr)
}

// global_exit from one PE of a shmem job ends the job, with that status
// even when it is 0, although the other PEs never finish.
func TestGlobalExitEndsTheJob(t *testing.T) {
	t.Setenv(peEnv, "globalexit")
	for _, status := range []int{0, 3} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Setenv(core.EnvShmDir, t.TempDir())
			code, _, stderr := runOshrun(t, "-np", "3", "-grace", "1s", os.Args[0], strconv.Itoa(status))
			require.Equal(t, status, code, stderr)
			require.Contains(t, stderr, fmt.Sprintf("oshrun: PE 1 called global_exit(%d); terminating the job", status))
		})
	}
}

func TestVerboseJob(t *testing.T) {
	t.Setenv(peEnv, "bootstrap")
	code, stdout, stderr := runOshrun(t, "-np", "3", "-v", "-bind", "127.0.0.1:0", os.Args[0])
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `oshrun: job [0-9a-f]+: 3 PEs of .*, bootstrap store at 127\.0\.0\.1:\d+`, stderr)
	for r := range 3 {
		require.Contains(t, stdout, fmt.Sprintf("PE %d done", r))
		require.Regexp(t, fmt.Sprintf(`oshrun: PE %d: pid \d+`, r), stderr)
	}
}

// TestSignalEndsJob runs oshrun as a process, sends it SIGTERM once its PEs
// are up, and expects 128+SIGTERM and no PE left.
func TestSignalEndsJob(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-np", "2", "-v", "-grace", "200ms", os.Args[0])
			cmd.Env = append(os.Environ(), mainEnv+"=1", peEnv+"=hang", "GORACE=atexit_sleep_ms=0")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			sc := bufio.NewScanner(out)
			for ready := 0; ready < 2 && sc.Scan(); {
				if sc.Text() == "ready" {
					ready++
				}
			}
			require.NoError(t, cmd.Process.Signal(sig))
			err = cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, 128+int(sig), ee.ExitCode(), stderr.String())
			require.Contains(t, stderr.String(), "oshrun: interrupted (received "+sig.String()+")")
			for _, l := range strings.Split(stderr.String(), "\n") {
				var rank, pid int
				if n, _ := fmt.Sscanf(l, "oshrun: PE %d: pid %d", &rank, &pid); n == 2 {
					require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "PE %d (pid %d) outlived oshrun", rank, pid)
				}
			}
		})
	}
}
