package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/launcher"
	"github.com/goshmem/goshmem/providers/plugin"
	"github.com/goshmem/goshmem/shmem"
)

func init() {
	extraRoles["lost-finalize"] = lostFinalizePE
	// As providers/all does: a PE started with GOSHMEM_PROVIDER_PATH
	// finds the plugins there.
	plugin.RegisterFound(nil)
}

// lostFinalizePE is a PE of a job in which PE args[0] kills (args[1]
// "kill") or stops ("stop") itself after a first barrier, while the others
// wait for it in a second one, their Finalize deferred as a program's is.
// The others say what the barrier and their Finalize returned, and how
// long Finalize took.
func lostFinalizePE(rank int, args []string) int {
	victim, _ := strconv.Atoi(args[0])
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	if err := w.BarrierAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		w.Finalize()
		return 91
	}
	if rank == victim {
		sig := syscall.SIGSTOP
		if args[1] == "kill" {
			sig = syscall.SIGKILL
		}
		syscall.Kill(os.Getpid(), sig)
		// The signal may take effect a moment after it is sent: nothing
		// of the job may run in that moment.
		select {}
	}
	berr := w.BarrierAll()
	fmt.Printf("PE %d: barrier: %v\n", rank, berr)
	start := time.Now()
	ferr := w.Finalize()
	fmt.Printf("PE %d: finalize returned after %dms: %v\n", rank, time.Since(start).Milliseconds(), ferr)
	if berr != nil || ferr != nil {
		return 1
	}
	return 0
}

// finalizeAfterLoss runs a job of np PEs over provider in which PE 1 is
// killed or stopped during a barrier, and checks that the others' barrier
// and Finalize return with the loss, Finalize within a bound, and that
// oshrun ends the job blaming PE 1.
func finalizeAfterLoss(t *testing.T, provider string, np int, extraEnv ...string) {
	t.Setenv(peEnv, "lost-finalize")
	for i := 0; i+1 < len(extraEnv); i += 2 {
		t.Setenv(extraEnv[i], extraEnv[i+1])
	}
	const victim = 1
	for _, mode := range []string{"kill", "stop"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(core.EnvShmDir, t.TempDir())
			// A hung job is interrupted, and fails the test, rather than
			// hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			code, stdout, stderr := runOshrunCtx(t, ctx, "-np", strconv.Itoa(np), "-provider", provider,
				"-grace", "1s", "-stopped-after", "2s", os.Args[0], strconv.Itoa(victim), mode)
			took := time.Since(start)
			require.NotEqual(t, launcher.ExitInterrupted, code, "the job hung (%v):\n%s%s", took, stdout, stderr)
			if mode == "kill" {
				require.Equal(t, 128+int(syscall.SIGKILL), code, "%s%s", stdout, stderr)
				require.Regexp(t, fmt.Sprintf(`oshrun: PE %d \(pid \d+\) was killed by signal 9 \(killed\); terminating the job`, victim),
					stderr, stdout)
			} else {
				require.Equal(t, launcher.ExitLost, code, "%s%s", stdout, stderr)
				require.Regexp(t, fmt.Sprintf(`oshrun: PE %d \(pid \d+\) was lost by the bootstrap store \(.+\) but is still running`, victim),
					stderr, stdout)
			}
			for r := range np {
				if r == victim {
					continue
				}
				m := regexp.MustCompile(fmt.Sprintf(`PE %d: finalize returned after (\d+)ms: (.*)`, r)).FindStringSubmatch(stdout)
				if m == nil {
					// oshrun may end a survivor before it prints: a
					// killed PE ends the job at once.
					continue
				}
				require.Regexp(t, fmt.Sprintf(`PE %d: barrier: .*PE %d lost`, r, victim), stdout, stderr)
				ms, _ := strconv.Atoi(m[1])
				require.Less(t, ms, 10_000, "PE %d's Finalize", r)
				require.Contains(t, m[2], "lost", "PE %d's Finalize reports the loss", r)
			}
			t.Logf("%s: job ended after %v:\n%s%s", mode, took.Round(time.Millisecond), stdout, stderr)
		})
	}
}

func TestFinalizeAfterLossLoopback(t *testing.T) { finalizeAfterLoss(t, "loopback", 3) }
func TestFinalizeAfterLossTCP(t *testing.T)      { finalizeAfterLoss(t, "tcp", 3) }

// Over a plugin provider (the example, loopback served from a plugin
// process) the PE process is what is killed or stopped; its plugin
// process dies with it or stops being served.
func TestFinalizeAfterLossPlugin(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, plugin.Prefix+"loopback-plugin")
	out, err := exec.Command("go", "build", "-o", exe, "../goshmem-provider-loopback-plugin").CombinedOutput()
	require.NoError(t, err, "%s", out)
	finalizeAfterLoss(t, "loopback-plugin", 3, core.EnvProviderPath, dir)
}
