package core_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// fakeJob makes a directory name in base holding owner records for the
// given pids and start times, and a file standing for a provider's.
func fakeJob(t *testing.T, base, name string, owners map[int]uint64) string {
	dir := filepath.Join(base, name)
	require.NoError(t, os.Mkdir(dir, 0o700))
	for pid, start := range owners {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "owner."+strconv.Itoa(pid)), fmt.Appendf(nil, "%d %d\n", pid, start), 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "heap"), []byte("data"), 0o600))
	return dir
}

// TestSweepJobDirs removes only the directories of jobs whose recorded
// processes are all gone, and never anything else.
func TestSweepJobDirs(t *testing.T) {
	base := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return base, true
		}
		return "", false
	}
	me := os.Getpid()
	myStart := ownStart(t)
	dead := fakeJob(t, base, "goshmem-dead", map[int]uint64{deadPid(t): 0, deadPid(t): 0})
	reused := fakeJob(t, base, "goshmem-reused", map[int]uint64{me: myStart + 1}) // this pid, another process
	live := fakeJob(t, base, "goshmem-live", map[int]uint64{me: myStart})
	half := fakeJob(t, base, "goshmem-half", map[int]uint64{deadPid(t): 0, me: myStart})
	bare := fakeJob(t, base, "goshmem-bare", nil)
	foreign := fakeJob(t, base, "other-dead", map[int]uint64{deadPid(t): 0})
	target := fakeJob(t, t.TempDir(), "goshmem-target", map[int]uint64{deadPid(t): 0})
	require.NoError(t, os.Symlink(target, filepath.Join(base, "goshmem-link")))

	removed := core.SweepJobDirs(lookup)
	require.ElementsMatch(t, []string{dead, reused}, removed)
	require.NoDirExists(t, dead)
	require.NoDirExists(t, reused)
	for _, kept := range []string{live, half, bare, foreign, target} {
		require.FileExists(t, filepath.Join(kept, "heap"), "%s is not a dead job's", kept)
	}
}

// ownStart is this process's start time as the job directory records it.
func ownStart(t *testing.T) uint64 {
	base := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return base, true
		}
		return "", false
	}
	dir, err := core.MakeJobDir(lookup, "start")
	require.NoError(t, err)
	defer core.LeaveJobDir(dir)
	b, err := os.ReadFile(filepath.Join(dir, "owner."+strconv.Itoa(os.Getpid())))
	require.NoError(t, err)
	var pid int
	var start uint64
	_, err = fmt.Sscanf(string(b), "%d %d", &pid, &start)
	require.NoError(t, err)
	return start
}

// TestLastOutRemovesJobDir: the job directory goes with the last domain
// that leaves it, and stays while anything is left in it.
func TestLastOutRemovesJobDir(t *testing.T) {
	base := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return base, true
		}
		return "", false
	}
	dir, err := core.MakeJobDir(lookup, "j")
	require.NoError(t, err)
	_, err = core.MakeJobDir(lookup, "j") // a second domain of this process
	require.NoError(t, err)
	require.NoError(t, core.LeaveJobDir(dir))
	require.DirExists(t, dir, "a domain of the job is still open")
	require.Empty(t, core.SweepJobDirs(lookup), "a live job's directory was swept")
	require.NoError(t, core.LeaveJobDir(dir))
	require.NoDirExists(t, dir)

	dir, err = core.MakeJobDir(lookup, "j")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "left"), nil, 0o600))
	require.NoError(t, core.LeaveJobDir(dir), "a directory still in use is no error")
	require.FileExists(t, filepath.Join(dir, "left"))
}
