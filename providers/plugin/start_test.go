package plugin_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/plugin"
)

// Executables that are no plugins, written by the tests: each records
// the pid of the process that must not outlive the start in the file
// named by its first line's variable, so the test can tell.
var misfits = map[string]string{
	// A script whose child keeps the stdout pipe open after the script
	// itself is killed.
	"sleepy": "sleep 1000 &\necho $! >\"$GOSHMEM_TEST_PIDFILE\"\nwait\n",
	// A program that never says anything: it just takes the start timeout.
	"execsleep": "echo $$ >\"$GOSHMEM_TEST_PIDFILE\"\nexec sleep 1000\n",
	// A child that floods stdout with lines that are no handshake, for ever.
	"flood": "yes 'this is not a handshake' &\necho $! >\"$GOSHMEM_TEST_PIDFILE\"\nwait\n",
	// The same without newlines.
	"floodraw": "cat /dev/zero &\necho $! >\"$GOSHMEM_TEST_PIDFILE\"\nwait\n",
}

// misfit writes the script of that name into a fresh directory and
// returns its path and the file its child's pid goes to. The child is
// killed at the end of the test whatever happened.
func misfit(t *testing.T, name string) (path, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, plugin.Prefix+name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+misfits[name]), 0o755))
	pidFile = filepath.Join(dir, "pid")
	t.Setenv("GOSHMEM_TEST_PIDFILE", pidFile)
	t.Cleanup(func() {
		if pid := readPid(pidFile); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return path, pidFile
}

func readPid(file string) int {
	b, _ := os.ReadFile(file)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// within runs f and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still runs after %v", what, d)
	}
}

// TestStartIsBounded starts programs that are no plugins and hold their
// output open or flood it: Info must report them unavailable within the
// start timeout (plus the kill), and nothing they started may survive.
func TestStartIsBounded(t *testing.T) {
	for name := range misfits {
		t.Run(name, func(t *testing.T) {
			path, pidFile := misfit(t, name)
			t.Setenv(plugin.EnvStartTimeout, "1s")
			p := plugin.New(name, path)
			var in core.Info
			start := time.Now()
			within(t, 15*time.Second, "Info of "+name, func() { in = p.Info() })
			t.Logf("%s: Info took %v: %s", name, time.Since(start), in.Description)
			require.True(t, strings.HasPrefix(in.Description, "unavailable:"), in.Description)
			require.Zero(t, in.Preference)
			child := readPid(pidFile)
			require.Positive(t, child, "the script did not start")
			waitExit(t, child, 5*time.Second, "process %d of the plugin outlived its failed start", child)
		})
	}
}

// TestStartTimeoutVariable: the start timeout is the one set, and a bad
// value is refused naming the variable.
func TestStartTimeoutVariable(t *testing.T) {
	path, _ := misfit(t, "execsleep")
	t.Setenv(plugin.EnvStartTimeout, "300ms")
	start := time.Now()
	in := plugin.New("execsleep", path).Info()
	require.Less(t, time.Since(start), 5*time.Second)
	require.Contains(t, in.Description, "no handshake within 300ms ("+plugin.EnvStartTimeout+")")

	for _, bad := range []string{"soon", "0", "-1s", "1h"} {
		t.Setenv(plugin.EnvStartTimeout, bad)
		in := plugin.New("execsleep", path).Info()
		require.Contains(t, in.Description, plugin.EnvStartTimeout, bad)
		require.Contains(t, in.Description, strconv.Quote(bad))
		require.Contains(t, in.Description, "a duration from 10ms to 10m0s")
	}
}

// TestAutomaticSelectionStartsNoPlugin: a job that names no provider, or
// only excludes some, never starts a plugin, however many are on the
// search path.
func TestAutomaticSelectionStartsNoPlugin(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	path := filepath.Join(dir, plugin.Prefix+"marker")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755))
	core.Register(plugin.New("marker", path))
	t.Setenv(plugin.EnvStartTimeout, "2s")
	for _, spec := range []string{"", "^tcp"} {
		within(t, 15*time.Second, "selection", func() { core.Select(spec, 1) })
		require.NoFileExists(t, marker, "selection with %s=%q started a plugin", core.EnvProvider, spec)
	}
	// Named, it is started, and is unavailable.
	_, err := core.Select("marker", 1)
	require.NoError(t, err)
	require.FileExists(t, marker)
}

// TestKilledPluginJobLeavesNoSocket kills a PE whose plugin is running:
// the plugin's socket must not be left in the temporary directory, and
// what the job left in its directory goes with the next sweep.
func TestKilledPluginJobLeavesNoSocket(t *testing.T) {
	// The job directory must be short enough for a socket path (see
	// socketBase); t.TempDir's names, made of the test's, are not.
	tmp := t.TempDir()
	shm, err := os.MkdirTemp("", "gs")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(shm) })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envOrphan+"=1", core.EnvShmDir+"="+shm, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	require.Equal(t, "open\n", line)
	kids := children(cmd.Process.Pid)
	require.Len(t, kids, 1, "the PE's plugin")
	require.NoError(t, cmd.Process.Kill())
	waitExit(t, kids[0], 10*time.Second, "plugin process %d still runs 10s after its PE died", kids[0])
	left, err := filepath.Glob(filepath.Join(tmp, "plugin*"))
	require.NoError(t, err)
	require.Empty(t, left, "the plugin's socket was left in the temporary directory")
	lookup := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return shm, true
		}
		return "", false
	}
	cmd.Wait()
	require.Len(t, core.SweepJobDirs(lookup), 1, "the dead job's directory")
	rest, err := os.ReadDir(shm)
	require.NoError(t, err)
	require.Empty(t, rest)
}
