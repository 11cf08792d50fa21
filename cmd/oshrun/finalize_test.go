package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/conformance"
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
// wait for it in a second one. The others say what the barrier and their
// Finalize returned, and how long Finalize took.
func lostFinalizePE(_ int, args []string) int {
	victim, _ := strconv.Atoi(args[0])
	w, err := shmem.Init(shmem.WithHeapSize(1 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	rank := w.MyPE() // under srun, GOSHMEM_RANK is not set
	berr := w.BarrierAll()
	if berr == nil && rank == victim {
		sig := syscall.SIGSTOP
		if args[1] == "kill" {
			sig = syscall.SIGKILL
		}
		syscall.Kill(os.Getpid(), sig)
		// The signal may take effect a moment after it is sent: nothing
		// of the job may run in that moment.
		time.Sleep(time.Hour)
		return 92
	}
	if berr == nil {
		berr = w.BarrierAll()
	}
	// A PE may learn of the loss in the first barrier: the victim may
	// leave it, and die, before the others have.
	return reportFinalize(w, rank, berr)
}

// reportFinalize says what a survivor's barrier returned (berr), then
// finalizes and says what Finalize returned and how long it took; the
// exit code is 1 if either failed.
func reportFinalize(w *shmem.World, rank int, berr error) int {
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
			t.Setenv(core.EnvShmDir, conformance.ShmDir(t))
			// A hung job is interrupted, and fails the test, rather than
			// hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			code, stdout, stderr := runOshrunCtx(t, ctx, "-np", strconv.Itoa(np), "-provider", provider,
				"-grace", "1s", "-stopped-after", "1s", os.Args[0], strconv.Itoa(victim), mode)
			took := time.Since(start)
			require.NotEqual(t, launcher.ExitInterrupted, code, "the job hung (%v):\n%s%s", took, stdout, stderr)
			if mode == "kill" {
				require.Equal(t, 128+int(syscall.SIGKILL), code, "%s%s", stdout, stderr)
				// "; terminating the job" follows unless the others have
				// already exited, having seen the loss.
				require.Regexp(t, fmt.Sprintf(`oshrun: PE %d \(pid \d+\) was killed by signal 9 \(killed\)`, victim),
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
				require.Less(t, ms, 4_000, "PE %d's Finalize (closeWait, 5s, must not be waited out)", r)
				require.Contains(t, m[2], "lost", "PE %d's Finalize reports the loss", r)
			}
			t.Logf("%s: job ended after %v:\n%s%s", mode, took.Round(time.Millisecond), stdout, stderr)
		})
	}
}

// finalizeAfterLossSrun runs jobs of np PEs over provider the way srun
// without PMI does (PE 0 serving the store), in which PE 1, or PE 0 that
// hosts the store, is killed or stopped during a barrier. No launcher ends
// the others, so their deferred Finalize is what ends them: each must
// return with the loss within a bound, and the process exit. A stopped PE
// is found by its silence (GOSHMEM_DEAD_AFTER, 2s here).
func finalizeAfterLossSrun(t *testing.T, provider string, np int, extraEnv ...string) {
	for _, mode := range []string{"kill", "stop"} {
		for _, victim := range []int{1, 0} {
			t.Run(fmt.Sprintf("srun/%s-PE%d", mode, victim), func(t *testing.T) {
				srunLoss(t, provider, np, mode, victim, extraEnv)
			})
		}
	}
}

func srunLoss(t *testing.T, provider string, np int, mode string, victim int, extraEnv []string) {
	addr := net.JoinHostPort("127.0.0.1", freePort(t))
	secret, err := bootstrap.NewSecret()
	require.NoError(t, err)
	shm := conformance.ShmDir(t)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != bootstrap.EnvRank && k != bootstrap.EnvSize && k != core.EnvProvider && k != core.EnvShmDir {
			env = append(env, kv)
		}
	}
	env = append(env, peEnv+"=lost-finalize", "GORACE=atexit_sleep_ms=0", "SLURM_NTASKS="+strconv.Itoa(np),
		"SLURM_JOB_ID="+strconv.Itoa(os.Getpid()), "SLURM_STEP_ID="+mode+strconv.Itoa(victim),
		bootstrap.EnvBootstrap+"="+addr, bootstrap.EnvSecret+"="+hex.EncodeToString(secret),
		bootstrap.EnvDeadAfter+"=2s", core.EnvProvider+"="+provider, core.EnvShmDir+"="+shm)
	env = append(env, extraEnv...)
	type result struct {
		rank int
		err  error
	}
	exited := make(chan result, np)
	outs := make([]*bytes.Buffer, np)
	for r := range np {
		cmd := exec.Command(os.Args[0], strconv.Itoa(victim), mode)
		cmd.Env = append(slices.Clip(env), "SLURM_PROCID="+strconv.Itoa(r))
		outs[r] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[r], outs[r]
		require.NoError(t, cmd.Start())
		// A stopped victim, or anything left after a failure, is killed
		// (a stopped process dies of SIGKILL too) before the next test.
		t.Cleanup(func() { cmd.Process.Kill() })
		go func() { exited <- result{r, cmd.Wait()} }()
	}
	waitFor := np
	if mode == "stop" {
		waitFor-- // the victim stays stopped
	}
	bound := time.NewTimer(20 * time.Second)
	defer bound.Stop()
	for range waitFor {
		select {
		case x := <-exited:
			if mode == "stop" {
				require.NotEqual(t, victim, x.rank, "the stopped PE exited: %v\n%s", x.err, outs[x.rank])
			} else if x.rank == victim {
				require.ErrorContains(t, x.err, "killed", "%s", outs[x.rank])
			}
		case <-bound.C:
			// Output is read only once the processes are gone.
			t.Fatalf("the job hung after PE %d was %s (GOSHMEM_DEAD_AFTER=2s)", victim, map[string]string{"kill": "killed", "stop": "stopped"}[mode])
		}
	}
	for r := range np {
		if r == victim {
			continue
		}
		out := outs[r].String()
		require.Regexp(t, fmt.Sprintf(`PE %d: barrier: .*PE %d lost`, r, victim), out)
		m := regexp.MustCompile(fmt.Sprintf(`PE %d: finalize returned after (\d+)ms: (.*)`, r)).FindStringSubmatch(out)
		require.NotNil(t, m, "PE %d did not return from Finalize:\n%s", r, out)
		ms, _ := strconv.Atoi(m[1])
		require.Less(t, ms, 4_000, "PE %d's Finalize (closeWait, 5s, must not be waited out)", r)
		require.Contains(t, m[2], "lost", "PE %d's Finalize reports the loss", r)
		t.Logf("PE %d: finalize returned after %sms: %s", r, m[1], m[2])
	}
}

// freePort returns a port of 127.0.0.1 nobody listens on.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return port
}

func TestFinalizeAfterLossLoopback(t *testing.T) {
	finalizeAfterLoss(t, "loopback", 3)
	finalizeAfterLossSrun(t, "loopback", 3)
}

func TestFinalizeAfterLossTCP(t *testing.T) {
	finalizeAfterLoss(t, "tcp", 3)
	finalizeAfterLossSrun(t, "tcp", 3)
}

// Over a plugin provider (the example, loopback served from a plugin
// process) the PE process is what is killed or stopped; its plugin
// process dies with it or stops being served.
func TestFinalizeAfterLossPlugin(t *testing.T) {
	finalizeAfterLoss(t, "loopback-plugin", 3, core.EnvProviderPath, buildPlugin(t))
}

func TestFinalizeAfterLossPluginSrun(t *testing.T) {
	finalizeAfterLossSrun(t, "loopback-plugin", 3, core.EnvProviderPath+"="+buildPlugin(t))
}

// buildPlugin builds the example plugin into a directory for
// GOSHMEM_PROVIDER_PATH.
func buildPlugin(t *testing.T) string {
	dir := t.TempDir()
	exe := filepath.Join(dir, plugin.Prefix+"loopback-plugin")
	out, err := exec.Command("go", "build", "-o", exe, "../goshmem-provider-loopback-plugin").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

// ntbring finds a lost neighbour by its own liveness as well; a stopped
// one there within GOSHMEM_NTB_DEAD_AFTER.
func TestFinalizeAfterLossNtbring(t *testing.T) {
	finalizeAfterLoss(t, "ntbring", 3, "GOSHMEM_NTB_DEAD_AFTER", "2s")
	finalizeAfterLossSrun(t, "ntbring", 3, "GOSHMEM_NTB_DEAD_AFTER=2s")
}
