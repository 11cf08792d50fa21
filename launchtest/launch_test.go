package launchtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap/pmix"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopSlurm()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built holds the programs every test runs, built once: ringshift (Go)
// and cring (C, with oshcc against libgoshmem.so).
var built struct {
	once      sync.Once
	dir       string
	ringshift string
	cring     string
	err       error
}

// programs builds the test programs once, or skips where no C compiler is.
func programs(t *testing.T) (ringshift, cring string) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: the C program cannot be built")
	}
	built.once.Do(func() { built.err = build() })
	require.NoError(t, built.err)
	return built.ringshift, built.cring
}

func build() error {
	dir, err := os.MkdirTemp("", "goshmem-launchtest-")
	if err != nil {
		return err
	}
	built.dir = dir
	// Read and run by the launchers' daemons, whose tasks run as this
	// user but may start elsewhere.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	include, err := filepath.Abs("../include")
	if err != nil {
		return err
	}
	bin, lib := filepath.Join(dir, "bin"), filepath.Join(dir, "lib")
	// oshcc finds the header and library beside its own bin/.
	if err := os.Symlink(include, filepath.Join(dir, "include")); err != nil {
		return err
	}
	steps := [][]string{
		{"go", "build", "-o", bin + "/", "../cmd/oshcc", "../examples/ringshift"},
		{"go", "build", "-buildmode=c-shared", "-o", filepath.Join(lib, "libgoshmem.so"), "../capi"},
		{filepath.Join(bin, "oshcc"), "-O2", "-o", filepath.Join(bin, "cring"), "testdata/cring.c"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	built.ringshift, built.cring = filepath.Join(bin, "ringshift"), filepath.Join(bin, "cring")
	return nil
}

// needPMIx skips a test of a PMIx launcher where the PMIx library does
// not load: the PEs would fail at init, saying so.
func needPMIx(t *testing.T) {
	t.Helper()
	if _, err := pmix.Available(os.LookupEnv); err != nil {
		t.Skipf("PMIx cannot be used here, so its launch is not tested: %v", err)
	}
}

// cleanEnv is this process's environment without any launcher's or
// goshmem's variables, so that what a job sees comes from its launcher
// alone; extra is added.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		skip := false
		for _, p := range []string{"GOSHMEM_", "SHMEM_", "PMI_", "PMIX_", "OMPI_", "SLURM_", "PRTE_"} {
			skip = skip || strings.HasPrefix(k, p)
		}
		if !skip {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// run runs a launcher's command to its end and returns its output and
// exit status.
func run(t *testing.T, env []string, argv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = built.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s did not finish:\n%s", strings.Join(argv, " "), out.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	require.NoError(t, err, "%s", out.String())
	return out.String(), 0
}

// verified runs a program's job and checks that it verified, the
// launcher and the interface it used named by SHMEM_INFO.
func verified(t *testing.T, env []string, launched string, want string, argv ...string) {
	t.Helper()
	out, code := run(t, append(env, "SHMEM_INFO=1"), argv...)
	require.Zero(t, code, "%s:\n%s", strings.Join(argv, " "), out)
	require.Contains(t, out, want, "%s", out)
	require.Contains(t, out, "goshmem: launched by "+launched, "%s", out)
}

// globalExit runs cring's global exit on PE 1 with status 7: the launcher
// ends every PE and exits with it.
func globalExit(t *testing.T, env []string, argv ...string) {
	t.Helper()
	out, code := run(t, env, argv...)
	require.Equal(t, 7, code, "%s", out)
}

// initialized matches the line each PE logs at SHMEM_DEBUG=1 once it has
// joined the job.
var initialized = regexp.MustCompile(`msg=initialized pe=(\d+)`)

// killOne starts a long job, waits until its npes PEs have all
// initialized, kills PE victim (found by the launcher's rank variable
// rankVar in the environment of a process running exe) and returns the
// job's output and exit status: the job must end, boundedly.
func killOne(t *testing.T, env []string, npes, victim int, rankVar, exe string, argv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(env, "SHMEM_DEBUG=1")
	cmd.Dir = built.dir
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	var out bytes.Buffer
	ready := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		seen := map[string]bool{}
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "level=INFO msg=\"bootstrap:") || strings.Contains(line, "level=DEBUG") && !initialized.MatchString(line) {
				continue // the bootstrap's and shmem's progress
			}
			out.WriteString(line + "\n")
			if m := initialized.FindStringSubmatch(line); m != nil && !seen[m[1]] {
				seen[m[1]] = true
				if len(seen) == npes {
					close(ready)
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	waited := func() (string, int) {
		err := cmd.Wait()
		pw.Close()
		<-scanned
		require.NoError(t, ctx.Err(), "the job did not end after PE %d was killed:\n%s", victim, out.String())
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out.String(), exit.ExitCode()
		}
		require.NoError(t, err)
		return out.String(), 0
	}
	select {
	case <-ready:
	case <-ctx.Done():
		cmd.Process.Kill()
		o, _ := waited()
		t.Fatalf("the PEs never all initialized:\n%s", o)
	}
	pid, err := findPE(exe, rankVar, victim)
	if err != nil {
		cmd.Process.Kill()
		waited()
		t.Fatal(err)
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	return waited()
}

// findPE returns the process running exe whose environment sets rankVar
// to rank: a PE the launcher's daemon started, so no child of this test.
func findPE(exe, rankVar string, rank int) (int, error) {
	want := rankVar + "=" + strconv.Itoa(rank)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || p != exe {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(b, []byte{0}) {
			if string(kv) == want {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process of %s has %s", exe, want)
}
