package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests build the library as programs get it (c-shared), compile the
// C programs of testdata against include/shmem.h and it, and run them
// under oshrun as separate processes, as a user would.

var built struct {
	once sync.Once
	dir  string // libgoshmem.so, oshrun and the compiled programs
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// programs are testdata's C programs, each of which prints "NAME ok PE"
// on every PE when all its checks pass.
var programs = []string{"rma", "amo", "wait", "coll", "reduce", "teams", "memory", "threads", "pshmem", "defer", "v16"}

// setup builds everything once, or skips the test where no C compiler is.
func setup(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the C interface's tests compile C programs")
	}
	built.once.Do(func() { built.dir, built.err = build() })
	require.NoError(t, built.err)
	return built.dir
}

func build() (string, error) {
	dir, err := os.MkdirTemp("", "capi-test-")
	if err != nil {
		return "", err
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
		return nil
	}
	if err := run("go", "build", "-buildmode=c-shared", "-o", filepath.Join(dir, "libgoshmem.so"), "."); err != nil {
		return dir, err
	}
	if err := run("go", "build", "-o", filepath.Join(dir, "oshrun"), "../cmd/oshrun"); err != nil {
		return dir, err
	}
	for _, p := range append(programs, "errors", "commit") {
		// A routine the header lacks must fail the build, not link
		// against an implicit declaration.
		if err := run("gcc", "-std=c11", "-Wall", "-Werror=implicit-function-declaration",
			"-I", "../include", "-I", "testdata", "-o", filepath.Join(dir, p), filepath.Join("testdata", p+".c"),
			"-L", dir, "-lgoshmem", "-Wl,-rpath,"+dir, "-lm", "-pthread"); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

// oshrun runs a compiled program on np PEs over provider and returns its
// output and exit status.
func oshrun(t *testing.T, dir, provider string, np int, prog string, args ...string) (string, int) {
	t.Helper()
	return oshrunEnv(t, dir, provider, nil, np, prog, args...)
}

// oshrunEnv is oshrun with env added to the PEs' environment.
func oshrunEnv(t *testing.T, dir, provider string, env []string, np int, prog string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "oshrun"), append([]string{"-np", fmt.Sprint(np), filepath.Join(dir, prog)}, args...)...)
	cmd.Env = append(append(os.Environ(), "GOSHMEM_PROVIDER="+provider, "SHMEM_SYMMETRIC_SIZE=32M"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s on %d PEs over %s did not finish:\n%s", prog, np, provider, out.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), 0
}

var providers = []string{"loopback", "tcp"}

func TestPrograms(t *testing.T) {
	dir := setup(t)
	for _, prov := range providers {
		for _, np := range []int{2, 3} {
			for _, prog := range programs {
				t.Run(fmt.Sprintf("%s/%d/%s", prov, np, prog), func(t *testing.T) {
					t.Parallel()
					out, code := oshrun(t, dir, prov, np, prog)
					require.Equal(t, 0, code, "exit status; output:\n%s", out)
					for pe := range np {
						require.Contains(t, out, fmt.Sprintf("%s ok %d", prog, pe))
					}
				})
			}
		}
	}
}

// TestDeferSerialized runs the queue's program below
// SHMEM_THREAD_MULTIPLE, where the queue takes no lock.
func TestDeferSerialized(t *testing.T) {
	dir := setup(t)
	for _, prov := range providers {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			out, code := oshrun(t, dir, prov, 2, "defer", "serialized")
			require.Equal(t, 0, code, "exit status; output:\n%s", out)
			for pe := range 2 {
				require.Contains(t, out, fmt.Sprintf("defer ok %d", pe))
			}
		})
	}
}

// TestErrors checks that a program's misuse ends the job with a message
// naming the routine, and that global exit and exit without finalize do
// what the specification and the launcher expect.
func TestErrors(t *testing.T) {
	dir := setup(t)
	cases := []struct {
		what string
		code int
		want []string
	}{
		// The library, not the program, ended the job: oshrun says so
		// and repeats why, and names no global_exit.
		{"bad-pe", 1, []string{"goshmem: shmem_long_p: ", "PE 3",
			"oshrun: PE 0 ended the job with status 1: the goshmem library failed in shmem_long_p: "}},
		{"not-symmetric", 1, []string{"goshmem: shmem_long_put: ", "not inside the symmetric heap"}},
		{"pe-quiet-bad-pe", 1, []string{"goshmem: shmem_pe_quiet: ", "target_pes[1]", "PE 3"}},
		{"bad-free", 1, []string{"goshmem: shmem_free: ", "is not a block of the symmetric heap", "takes only what"}},
		{"before-init", 1, []string{"goshmem: shmem_long_p: called before shmem_init"}},
		{"global-exit", 7, []string{"oshrun: PE 2 called global_exit(7)"}},
		// A count or stride whose bytes overflow size_t ends the job
		// naming the routine, instead of moving what the product wrapped to.
		{"overflow-put", 1, []string{"goshmem: shmem_long_put: ", "overflow"}},
		{"overflow-put_nbi", 1, []string{"goshmem: shmem_long_put_nbi: ", "overflow"}},
		{"overflow-get", 1, []string{"goshmem: shmem_long_get: ", "overflow"}},
		{"overflow-get_nbi", 1, []string{"goshmem: shmem_long_get_nbi: ", "overflow"}},
		{"overflow-put64", 1, []string{"goshmem: shmem_put64: ", "overflow"}},
		{"overflow-put_signal", 1, []string{"goshmem: shmem_long_put_signal: ", "overflow"}},
		{"overflow-iput", 1, []string{"goshmem: shmem_long_iput: ", "overflow"}},
		{"overflow-iget", 1, []string{"goshmem: shmem_long_iget: ", "overflow"}},
		{"overflow-ibput", 1, []string{"goshmem: shmem_long_ibput: ", "overflow"}},
		{"overflow-ibget", 1, []string{"goshmem: shmem_long_ibget: ", "overflow"}},
		{"overflow-test_all", 1, []string{"goshmem: shmem_long_test_all: ", "overflow"}},
		{"overflow-wait_until_any", 1, []string{"goshmem: shmem_long_wait_until_any: ", "overflow"}},
		{"overflow-broadcast", 1, []string{"goshmem: shmem_long_broadcast: ", "overflow"}},
		{"overflow-fcollect64", 1, []string{"goshmem: shmem_fcollect64: ", "overflow"}},
		{"overflow-alltoalls", 1, []string{"goshmem: shmem_long_alltoalls: ", "overflow"}},
		{"no-finalize", 0, []string{"left 0", "left 1", "left 2"}},
		// Finalize is no barrier: a PE that finalizes where the others
		// wait in one ends the job, named, as does one that leaves main.
		{"finalize-in-barrier", 1, []string{"goshmem: shmem_barrier_all: ", "PE 1 finalized while PE "}},
		{"exit-in-barrier", 1, []string{"goshmem: shmem_barrier_all: ", "PE 1 finalized while PE "}},
	}
	for _, prov := range providers {
		for _, c := range cases {
			t.Run(prov+"/"+c.what, func(t *testing.T) {
				t.Parallel()
				out, code := oshrun(t, dir, prov, 3, "errors", c.what)
				require.Equal(t, c.code, code, "exit status; output:\n%s", out)
				for _, w := range c.want {
					require.Contains(t, out, w)
				}
				if c.what != "global-exit" {
					require.NotContains(t, out, "global_exit", "no PE called it")
				}
				require.NotContains(t, out, " 0 bytes", "an address is no buffer of 0 bytes")
				require.NotContains(t, out, "passed a barrier")
			})
		}
	}
}

// TestWaitReportFromC: a C program's PEs kept waiting in
// shmem_barrier_all by a sleeping PE say so after GOSHMEM_WAIT_REPORT,
// naming the sleeper, and then complete the barrier: the fast path's
// barrier on loopback, the library's over tcp.
func TestWaitReportFromC(t *testing.T) {
	dir := setup(t)
	for _, prov := range providers {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			out, code := oshrunEnv(t, dir, prov, []string{"GOSHMEM_WAIT_REPORT=300ms"}, 3, "errors", "sleep-in-barrier")
			require.Equal(t, 0, code, "exit status; output:\n%s", out)
			require.Contains(t, out, "goshmem: PE 0 has waited ")
			// The fast path names the C routine, the library the Go one.
			require.Regexp(t, ` in (shmem_)?barrier_all for the other members of its team of 3 PEs`, out)
			require.Contains(t, out, "PE 2 waits in no goshmem routine")
			require.Regexp(t, `PE 1 waits in (shmem_)?barrier_all, for \d`, out)
			for pe := range 3 {
				require.Contains(t, out, fmt.Sprintf("PE %d passed", pe))
			}
		})
	}
}

// TestMallocThatCannotBeCommitted: when the shared-memory file system
// fills up after init, a block whose memory cannot be committed is NULL
// from every allocation routine on every PE, with SHMEM_DEBUG saying why
// in SHMEM_SYMMETRIC_SIZE's and the directory's terms; nothing faults,
// and once there is room the job allocates again. The file system is a
// small tmpfs of the test's own, so the test fills nobody else's.
func TestMallocThatCannotBeCommitted(t *testing.T) {
	dir := setup(t)
	shm := t.TempDir()
	if err := syscall.Mount("tmpfs", shm, "tmpfs", 0, "size=128m,mode=0700"); err != nil {
		t.Skipf("filling a file system needs a small tmpfs of the test's own, and this process may not mount one: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(shm, syscall.MNT_DETACH)) })
	out, code := oshrunEnv(t, dir, "loopback", []string{"GOSHMEM_SHM_DIR=" + shm, "SHMEM_DEBUG=1"}, 2, "commit")
	require.Equal(t, 0, code, "exit status; output:\n%s", out)
	for pe := range 2 {
		require.Contains(t, out, fmt.Sprintf("commit ok %d", pe))
	}
	require.Contains(t, out, "goshmem: shmem_malloc: shmem: malloc of 8388608 bytes: the symmetric heap of SHMEM_SYMMETRIC_SIZE=32M")
	require.Contains(t, out, "could not commit its memory in "+shm)
}
