package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/proc"
	_ "github.com/goshmem/goshmem/providers/ntbring"
	"github.com/goshmem/goshmem/shmem"
)

func init() {
	extraRoles["hold"] = holdPE
	extraRoles["clean"] = cleanPE
}

// holdPE joins a shmem job, says "ready <pid>" once every PE has its heap,
// and waits to be killed.
func holdPE(rank int, _ []string) int {
	w, err := shmem.Init(shmem.WithHeapSize(4 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	if _, err := shmem.Malloc[int64](w, 1024); err != nil || w.BarrierAll() != nil {
		return 91
	}
	fmt.Printf("ready %d\n", os.Getpid())
	time.Sleep(time.Hour)
	return 92
}

// cleanPE runs a shmem job to its end.
func cleanPE(rank int, _ []string) int {
	w, err := shmem.Init(shmem.WithHeapSize(4 << 20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	buf, err := shmem.Malloc[int64](w, 1)
	if err == nil {
		err = shmem.P(w, &buf[0], int64(rank), (rank+1)%w.NPEs())
	}
	if err == nil {
		err = w.BarrierAll()
	}
	if err == nil {
		err = w.Finalize()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	return 0
}

// jobDirs lists the job directories in shm.
func jobDirs(t *testing.T, shm string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(shm, "goshmem-*"))
	require.NoError(t, err)
	return dirs
}

// waitGone waits until pid has exited (a zombie waiting for its parent
// has).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return !proc.Alive(pid) }, 10*time.Second, 10*time.Millisecond,
		"PE %d outlived oshrun's death by 10s", pid)
}

// TestKilledLauncherLeavesNothingToTheNextJob kills oshrun with SIGKILL
// while its PEs hold their heaps: the PEs die with it, and the job's files
// stay in the shared-memory directory, but the next job removes them.
func TestKilledLauncherLeavesNothingToTheNextJob(t *testing.T) {
	for _, prov := range []string{"loopback", "ntbring"} {
		t.Run(prov, func(t *testing.T) {
			shm := t.TempDir()
			cmd := exec.Command(os.Args[0], "-np", "2", "-provider", prov, os.Args[0])
			cmd.Env = append(os.Environ(), mainEnv+"=1", peEnv+"=hold", "GORACE=atexit_sleep_ms=0",
				core.EnvShmDir+"="+shm)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			var pids []int
			sc := bufio.NewScanner(out)
			for len(pids) < 2 && sc.Scan() {
				var pid int
				if n, _ := fmt.Sscanf(sc.Text(), "ready %d", &pid); n == 1 {
					pids = append(pids, pid)
				}
			}
			require.Len(t, pids, 2, "the PEs did not get ready")
			require.NoError(t, cmd.Process.Kill())
			cmd.Wait()
			for _, pid := range pids {
				waitGone(t, pid)
			}
			left := jobDirs(t, shm)
			require.Len(t, left, 1, "the killed job's directory")
			t.Logf("left by the killed job: %s", du(left[0]))

			t.Setenv(peEnv, "args")
			t.Setenv(core.EnvShmDir, shm)
			code, _, stderr := runOshrun(t, "-np", "1", os.Args[0])
			require.Equal(t, 0, code, stderr)
			require.Empty(t, jobDirs(t, shm), "the next job left the dead job's files")
		})
	}
}

// du describes what a directory holds, for the log.
func du(dir string) string {
	var n, size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n++
			size += fi.Size()
		}
		return nil
	})
	return fmt.Sprintf("%s: %d files, %d bytes", dir, n, size)
}

// srunJob starts n PEs the way srun does: no oshrun, rank and size from
// SLURM_PROCID and SLURM_NTASKS, PE 0 serving the store at
// GOSHMEM_BOOTSTRAP. It returns the started processes and, for role
// "hold", their output.
func srunJob(t *testing.T, n int, role, prov, shm string) (cmds []*exec.Cmd, ready []*bufio.Scanner) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	secret, err := bootstrap.NewSecret()
	require.NoError(t, err)
	step := strconv.FormatInt(time.Now().UnixNano(), 10) // one job id for all its PEs
	for r := range n {
		cmd := exec.Command(os.Args[0])
		env := []string{}
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k != bootstrap.EnvRank && k != bootstrap.EnvSize && k != core.EnvProvider {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, peEnv+"="+role, "GORACE=atexit_sleep_ms=0",
			"SLURM_PROCID="+strconv.Itoa(r), "SLURM_NTASKS="+strconv.Itoa(n),
			"SLURM_JOB_ID="+strconv.Itoa(os.Getpid()), "SLURM_STEP_ID="+step,
			bootstrap.EnvBootstrap+"="+addr, bootstrap.EnvSecret+"="+hex.EncodeToString(secret),
			core.EnvProvider+"="+prov, core.EnvShmDir+"="+shm)
		cmd.Stderr = os.Stderr
		if role == "hold" {
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			ready = append(ready, bufio.NewScanner(out))
		}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds = append(cmds, cmd)
	}
	return cmds, ready
}

// TestSrunJobLeavesNothing runs jobs without oshrun, which would clean up
// after them: a clean run must leave nothing, and the files of a job whose
// PEs were all killed must be gone after the next job.
func TestSrunJobLeavesNothing(t *testing.T) {
	for _, prov := range []string{"loopback", "ntbring"} {
		t.Run(prov, func(t *testing.T) {
			shm := t.TempDir()
			clean, _ := srunJob(t, 2, "clean", prov, shm)
			for _, cmd := range clean {
				require.NoError(t, cmd.Wait())
			}
			require.Empty(t, jobDirs(t, shm), "a clean run left its directory")

			cmds, ready := srunJob(t, 2, "hold", prov, shm)
			for _, sc := range ready {
				require.True(t, sc.Scan() && strings.HasPrefix(sc.Text(), "ready"), "a PE did not get ready")
			}
			for _, cmd := range cmds {
				cmd.Process.Kill()
				cmd.Wait()
			}
			left := jobDirs(t, shm)
			require.Len(t, left, 1, "the killed job's directory")
			t.Logf("left by the killed job: %s", du(left[0]))

			next, _ := srunJob(t, 2, "clean", prov, shm)
			for _, cmd := range next {
				require.NoError(t, cmd.Wait())
			}
			require.Empty(t, jobDirs(t, shm), "the next job left the dead job's files, or its own")
		})
	}
}
