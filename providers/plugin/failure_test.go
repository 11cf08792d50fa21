package plugin_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/stretchr/testify/assert"

	"github.com/goshmem/goshmem/internal/proc"
	"github.com/goshmem/goshmem/providers/plugin"
)

// badProvider is the misbehaving test plugin in the given mode, as a
// fresh provider (Info is remembered per provider).
func badProvider(t *testing.T, mode string) core.Provider {
	t.Setenv("GOSHMEM_BADPLUGIN_MODE", mode)
	return plugin.New(badPlugin, filepath.Join(os.Getenv(envPluginDir), plugin.Prefix+badPlugin))
}

// testTimeout is the plugin timeout the failure tests set: the bound on
// every error they expect.
const testTimeout = 2 * time.Second

// openOne opens a one-PE job on p, with the plugin timeout set short.
func openOne(t *testing.T, p core.Provider) (core.Domain, error) {
	t.Helper()
	shm := t.TempDir()
	env := map[string]string{
		core.EnvShmDir:                     shm,
		core.ParamEnv(p.Name(), "TIMEOUT"): testTimeout.String(),
	}
	b := bootstrap.NewLocal(1)[0]
	t.Cleanup(func() { b.Close() })
	return p.Open(&core.Config{Bootstrap: b, JobID: "failure", Env: func(k string) (string, bool) {
		if k == plugin.EnvStartTimeout {
			return os.LookupEnv(k) // as the test sets it
		}
		v, ok := env[k]
		return v, ok
	}})
}

// wantPluginError checks that err is an *plugin.Error naming the plugin,
// wrapping want, with want text in its message.
func wantPluginError(t *testing.T, err error, want error, text string) {
	t.Helper()
	var pe *plugin.Error
	if !errors.As(err, &pe) || !errors.Is(err, want) {
		t.Fatalf("got %v (%T), want a *plugin.Error wrapping %v", err, err, want)
	}
	if pe.Name != badPlugin || !strings.Contains(err.Error(), pe.Path) || !strings.Contains(err.Error(), text) {
		t.Fatalf("error %q should name plugin %q, its path and say %q", err, badPlugin, text)
	}
	t.Logf("error: %v", err)
}

// bounded fails the test if f takes much longer than the plugin timeout.
func bounded(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > 4*testTimeout+5*time.Second {
		t.Fatalf("%s took %v; the plugin timeout is %v", what, d, testTimeout)
	}
}

func TestWrongCookie(t *testing.T) {
	p := badProvider(t, "cookie")
	bounded(t, "open", func() {
		_, err := openOne(t, p)
		// What the refusing plugin wrote to stderr is quoted.
		wantPluginError(t, err, core.ErrInvalid, "its stderr ended: This binary is a plugin")
	})
}

func TestGarbageHandshake(t *testing.T) {
	p := badProvider(t, "stdout")
	bounded(t, "open", func() {
		_, err := openOne(t, p)
		wantPluginError(t, err, core.ErrInvalid, "handshake failed")
	})
}

func TestGarbageInfo(t *testing.T) {
	p := badProvider(t, "info")
	bounded(t, "open", func() {
		_, err := openOne(t, p)
		wantPluginError(t, err, core.ErrInvalid, "answered garbage: locality 42")
	})
}

func TestGarbageResult(t *testing.T) {
	d, r, e := endpointOn(t, badProvider(t, "result"))
	defer d.Close()
	bounded(t, "put and quiet", func() {
		err := e.Put(0, r, 0, []byte("data"))
		if err == nil {
			err = e.Quiet()
		}
		wantPluginError(t, err, core.ErrInvalid, "answered garbage: error kind 99")
	})
}

// TestUnsharedRegion serves a provider whose region is not in a file the
// PE can map: NewRegion must say so, not hand out other memory.
func TestUnsharedRegion(t *testing.T) {
	d, err := openOne(t, badProvider(t, "anon"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.NewRegion(4096)
	if !errors.Is(err, core.ErrNotSupported) || !strings.Contains(err.Error(), "not a file of the job directory") {
		t.Fatalf("got %v, want ErrNotSupported saying the memory is not a file of the job directory", err)
	}
	t.Logf("error: %v", err)
}

// endpointOn opens a one-PE domain with a region and an endpoint.
func endpointOn(t *testing.T, p core.Provider) (core.Domain, core.Region, core.Endpoint) {
	t.Helper()
	d, err := openOne(t, p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.NewRegion(4096)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	e, err := d.NewEndpoint(core.EndpointOptions{})
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	return d, r, e
}

func TestCrashMidOperation(t *testing.T) {
	d, r, e := endpointOn(t, badProvider(t, "crash"))
	defer d.Close()
	bounded(t, "put and quiet", func() {
		err := e.Put(0, r, 0, []byte("lost"))
		if err == nil {
			err = e.Quiet() // the put was pipelined; its fate shows here
		}
		wantPluginError(t, err, core.ErrPeerLost, "crashing in put as asked")
		// How it died: a Go panic exits with status 2.
		assert.ErrorContains(t, err, "exited with status 2")
	})
	// Every later call reports the same, without waiting again.
	if _, err := e.GetValue(0, r, 0, 8); !errors.Is(err, core.ErrPeerLost) {
		t.Fatalf("get after the crash: %v", err)
	}
}

func TestHang(t *testing.T) {
	d, r, e := endpointOn(t, badProvider(t, "hang"))
	defer d.Close()
	bounded(t, "get", func() {
		err := e.Get(0, r, 0, make([]byte, 8))
		wantPluginError(t, err, core.ErrTimeout, "no answer within "+testTimeout.String())
	})
}

// TestHangInOpen: a collective is bounded by the time the plugin spends
// outside the job's bootstrap.
func TestHangInOpen(t *testing.T) {
	p := badProvider(t, "hang-open")
	bounded(t, "open", func() {
		_, err := openOne(t, p)
		wantPluginError(t, err, core.ErrTimeout, "outside the job's bootstrap")
	})
}

// envOrphan makes the test binary a PE that opens a domain on the example
// plugin, says so, and waits to be killed.
const envOrphan = "GOSHMEM_PLUGIN_TEST_ORPHAN"

func orphanMain() {
	p, err := core.Lookup(examplePlugin)
	if err == nil {
		b := bootstrap.NewLocal(1)[0]
		_, err = p.Open(&core.Config{Bootstrap: b, JobID: "orphan"})
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("open")
	select {}
}

// TestPluginDiesWithItsPE kills a PE that has a plugin running and checks
// that the plugin exits on its own.
func TestPluginDiesWithItsPE(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envOrphan+"=1", core.EnvShmDir+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "open\n" {
		t.Fatalf("the PE said %q", line)
	}
	kids := children(cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("the PE has %d child processes, want its plugin", len(kids))
	}
	cmd.Process.Kill()
	waitExit(t, kids[0], 10*time.Second, "plugin process %d still runs 10s after its PE died", kids[0])
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		n, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, ok := stat(n); ok && st.ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

type procStat struct {
	state byte
	ppid  int
}

// stat reads a process's state and parent from /proc/<pid>/stat.
func stat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{state: f[0][0], ppid: ppid}, true
}

// waitExit waits up to d for pid to exit (a zombie has); a process still
// running then is killed and fails the test with msg.
func waitExit(t *testing.T, pid int, d time.Duration, msg string, args ...any) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return !proc.Alive(pid) }, d, 10*time.Millisecond, append([]any{msg}, args...)...) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.FailNow()
	}
}

// TestPlacedRegion serves a provider that places its regions in memory it
// is given (core.RegionPlacer): the PE's Local is the very memory the
// provider in the plugin process reads and writes, both ways.
func TestPlacedRegion(t *testing.T) {
	d, r, e := endpointOn(t, badProvider(t, "placed"))
	defer d.Close()
	if err := e.Put(0, r, 8, []byte("from the plugin")); err != nil {
		t.Fatal(err)
	}
	if err := e.Quiet(); err != nil {
		t.Fatal(err)
	}
	if got := string(r.Local()[8:23]); got != "from the plugin" {
		t.Fatalf("the PE's memory holds %q after the put", got)
	}
	binary.NativeEndian.PutUint64(r.Local()[96:], 41)
	if v, err := e.FetchAtomic(0, r, 96, core.AtomicAdd, core.Uint64, 1, 0); err != nil || v != 41 {
		t.Fatalf("fetch-add over a word the PE stored: %d, %v; want 41", v, err)
	}
	if v := binary.NativeEndian.Uint64(r.Local()[96:]); v != 42 {
		t.Fatalf("the PE sees %d after the plugin's fetch-add, want 42", v)
	}
}
