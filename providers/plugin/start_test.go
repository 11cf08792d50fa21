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

// TestStartIsBounded opens a domain on programs that are no plugins and
// hold their output open or flood it: Open must fail within the start
// timeout (plus the kill), and nothing they started may survive.
func TestStartIsBounded(t *testing.T) {
	for name := range misfits {
		t.Run(name, func(t *testing.T) {
			path, pidFile := misfit(t, name)
			t.Setenv(plugin.EnvStartTimeout, "1s")
			p := plugin.New(name, path)
			var err error
			start := time.Now()
			within(t, 15*time.Second, "Open of "+name, func() { _, err = openOne(t, p) })
			t.Logf("%s: Open took %v: %v", name, time.Since(start), err)
			var pe *plugin.Error
			require.ErrorAs(t, err, &pe)
			if !strings.HasPrefix(name, "flood") { // a flood is refused at once
				require.ErrorIs(t, err, core.ErrTimeout)
				require.ErrorContains(t, err, "no handshake within 1s ("+plugin.EnvStartTimeout+")")
			}
			child := readPid(pidFile)
			if strings.HasPrefix(name, "flood") && child == 0 {
				return // refused, and its group killed, before it wrote its child's pid
			}
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
	_, err := openOne(t, plugin.New("execsleep", path))
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorContains(t, err, "no handshake within 300ms ("+plugin.EnvStartTimeout+")")

	for _, bad := range []string{"soon", "0", "-1s", "1h"} {
		t.Setenv(plugin.EnvStartTimeout, bad)
		_, err := openOne(t, plugin.New("execsleep", path))
		require.ErrorContains(t, err, plugin.EnvStartTimeout, bad)
		require.ErrorContains(t, err, strconv.Quote(bad))
		require.ErrorContains(t, err, "a duration from 10ms to 10m0s")
	}
}

// spy writes a plugin executable that records being started (and then
// fails its handshake) into dir, and returns the file it touches.
func spy(t *testing.T, dir, name string) (path, marker string) {
	t.Helper()
	marker = filepath.Join(dir, name+".started")
	path = filepath.Join(dir, plugin.Prefix+name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755))
	return path, marker
}

// TestAutomaticSelectionStartsNoPlugin: a job that names no provider, or
// only excludes some, never starts a plugin, however many are on the
// search path, and neither does listing one (Info): only naming it does.
func TestAutomaticSelectionStartsNoPlugin(t *testing.T) {
	dir := t.TempDir()
	_, marker := spy(t, dir, "marker")
	found := plugin.RegisterFound(func(k string) (string, bool) {
		if k == core.EnvProviderPath {
			return dir, true
		}
		return "", false
	})
	require.Len(t, found, 1)
	p, err := core.Lookup("marker")
	require.NoError(t, err)
	t.Setenv(plugin.EnvStartTimeout, "2s")
	for _, spec := range []string{"", "^tcp"} {
		within(t, 15*time.Second, "selection", func() { core.Select(spec, 1) })
		require.NoFileExists(t, marker, "selection with %s=%q started a plugin", core.EnvProvider, spec)
	}
	for _, q := range core.Providers() {
		q.Info()
	}
	in := p.Info()
	require.NoFileExists(t, marker, "Info started a plugin")
	require.Contains(t, in.Description, "no manifest "+plugin.ManifestPath(filepath.Join(dir, plugin.Prefix+"marker")))
	require.Zero(t, in.Preference)
	require.Zero(t, in.Caps)
	// Named, it is selected; opened, it is started, and fails.
	q, err := core.Select("marker", 1)
	require.NoError(t, err)
	require.Same(t, p, q)
	require.NoFileExists(t, marker, "naming a plugin started it before its Open")
	_, err = openOne(t, p)
	require.Error(t, err)
	require.FileExists(t, marker)
}

// TestManifest: Info reads the manifest beside the executable; one that
// is older than its executable, or garbage, is not believed.
func TestManifest(t *testing.T) {
	dir := t.TempDir()
	path, marker := spy(t, dir, "listed")
	exe := filepath.Join(os.Getenv(envPluginDir), plugin.Prefix+examplePlugin)
	good, err := os.ReadFile(plugin.ManifestPath(exe))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(plugin.ManifestPath(path), good, 0o644))
	in := plugin.New("listed", path).Info()
	require.Equal(t, "listed", in.Name)
	require.True(t, in.Caps.Has(core.CapRMA), "%+v", in)
	require.False(t, in.Caps.Has(core.CapDirectAccess))
	require.Equal(t, "plugin "+path+", protocol 1", in.Origin)

	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(plugin.ManifestPath(path), old, old))
	in = plugin.New("listed", path).Info()
	require.Contains(t, in.Description, "older than its executable")
	require.Zero(t, in.Caps)

	require.NoError(t, os.WriteFile(plugin.ManifestPath(path), []byte(`{"protocol":1,"locality":42}`), 0o644))
	in = plugin.New("listed", path).Info()
	require.Contains(t, in.Description, "locality 42")
	require.NoFileExists(t, marker)
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

// TestInfoAfterOpen: a plugin without a manifest is unknown until a
// domain opens on it; from then on Info is what the process said, which
// is what shmem reads of the provider it opened.
func TestInfoAfterOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), plugin.Prefix+"unlisted")
	require.NoError(t, os.Symlink(filepath.Join(os.Getenv(envPluginDir), plugin.Prefix+examplePlugin), path))
	p := plugin.New("unlisted", path)
	require.Zero(t, p.Info().Caps)
	d, err := openOne(t, p)
	require.NoError(t, err)
	defer d.Close()
	in := p.Info()
	require.True(t, in.Caps.Has(core.CapRMA|core.CapFetchAtomic), "%+v", in)
	require.Equal(t, "unlisted", in.Name)
}

// TestCrashAtStartSaysHow runs plugins that die before their handshake,
// by exiting and by a signal: the error names the plugin and says how its
// process ended (and, where go-plugin kept it, what it last wrote to
// stderr), not only that its (empty) standard output was no handshake.
func TestCrashAtStartSaysHow(t *testing.T) {
	for _, tc := range []struct{ name, script, want string }{
		{"exits", "echo 'cannot read its configuration' >&2\nexit 3\n", "the plugin process exited with status 3 before its handshake"},
		{"segfaults", "echo 'about to crash' >&2\nkill -SEGV $$\n", "the plugin process was killed by signal 11 (segmentation fault) before its handshake"},
		// go-plugin kills a process whose first line is no handshake.
		{"says garbage", "echo 'not a handshake'\nsleep 1000\n", `handshake failed; its standard output began "not a handshake", which is no plugin handshake`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), plugin.Prefix+"crashy")
			require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+tc.script), 0o755))
			_, err := openOne(t, plugin.New("crashy", path))
			var pe *plugin.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "crashy", pe.Name)
			require.Equal(t, path, pe.Path)
			require.ErrorContains(t, err, "plugin crashy ("+path+"): start: "+tc.want)
			require.NotContains(t, err.Error(), "Unrecognized remote plugin message")
			// What the plugin wrote to stderr is said where go-plugin
			// copied it before the pipe closed (see tail.settle): when
			// said, it is the plugin's own line.
			if _, words, ok := strings.Cut(err.Error(), "its stderr ended: "); ok {
				require.Contains(t, words, strings.Split(strings.Split(tc.script, "'")[1], "'")[0])
			}
		})
	}
}
