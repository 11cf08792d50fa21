package launcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/globalexit"
	"github.com/goshmem/goshmem/internal/sys"
)

// The test binary doubles as the PE program: with roleEnv set it runs
// child instead of the tests.
const roleEnv = "LAUNCHER_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(child(role, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// sweptBehind makes dir look as it does when every PE of the job has
// exited without leaving it (as PEs do after a global exit): its one PE
// owner is a process that has exited. Then another process sweeps the
// dead jobs' directories, as a job starting beside this one does.
func sweptBehind(dir string) error {
	gone := exec.Command(os.Args[0])
	gone.Env = append(os.Environ(), roleEnv+"=none")
	_ = gone.Run() // an unknown role: it exits at once
	pid := gone.ProcessState.Pid()
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("owner.%d", pid)), fmt.Appendf(nil, "%d 1\n", pid), 0o600); err != nil {
		return err
	}
	sweep := exec.Command(os.Args[0])
	sweep.Env = append(os.Environ(), roleEnv+"=sweep")
	return sweep.Run()
}

// child runs one PE of a test job and returns its exit status.
func child(role string, args []string) int {
	rank, _ := strconv.Atoi(os.Getenv(bootstrap.EnvRank))
	connect := func() core.Bootstrap {
		job, launched, err := bootstrap.JobFromEnv(nil)
		if err != nil || !launched {
			fmt.Fprintln(os.Stderr, "child: not launched:", err)
			os.Exit(90)
		}
		b, err := bootstrap.Connect(job, 10*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child: connect:", err)
			os.Exit(91)
		}
		return b
	}
	hang := func() int {
		time.Sleep(time.Hour)
		return 92
	}
	switch role {
	case "exit": // args[rank] is this PE's exit status
		if rank < len(args) {
			n, _ := strconv.Atoi(args[rank])
			return n
		}
		return 0
	case "bootstrap": // a correct job: allgather ranks, finalize
		b := connect()
		all, err := b.Allgather([]byte(strconv.Itoa(rank)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "allgather:", err)
			return 93
		}
		for pe, d := range all {
			if string(d) != strconv.Itoa(pe) {
				fmt.Fprintf(os.Stderr, "PE %d sent %q\n", pe, d)
				return 94
			}
		}
		fmt.Printf("PE %d of %d: job %s ok\n", b.Rank(), b.Size(), os.Getenv(bootstrap.EnvJobID))
		if err := b.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			return 95
		}
		return 0
	case "print": // many lines, written in small pieces, and a last partial line
		w := bufio.NewWriterSize(os.Stdout, 7) // odd size: lines leave in fragments
		for i := range 200 {
			fmt.Fprintf(w, "hello from pe %d line %d %s\n", rank, i, strings.Repeat("x", i%40))
		}
		fmt.Fprintf(w, "tail-%d", rank)
		w.Flush()
		fmt.Fprintf(os.Stderr, "err from pe %d\n", rank)
		return 0
	case "args":
		fmt.Printf("args=%q\n", args)
		return 0
	case "cpus": // the CPUs this PE may run on
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return 97
		}
		for l := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				fmt.Printf("PE %d: %s\n", rank, strings.TrimSpace(v))
			}
		}
		return 0
	case "killself": // everyone joins; PE args[0] dies by SIGKILL; the others wait
		b := connect()
		if err := b.Barrier(); err != nil {
			return 96
		}
		target, _ := strconv.Atoi(args[0])
		if rank == target {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if len(args) > 1 && args[1] == "ignoreterm" {
			signal.Ignore(syscall.SIGTERM)
		}
		b.Barrier() // fails when the target is lost; then wait to be ended
		return hang()
	case "initfail": // PE 1 closes its bootstrap cleanly, as a failed init does, and exits 3; the others finalize
		b := connect()
		if rank == 1 {
			b.Close()
			fmt.Fprintln(os.Stderr, "init failed")
			return 3
		}
		if err := b.Close(); err != nil {
			return 95
		}
		return 0
	case "unfinalized": // PE 1 exits 0 without closing its bootstrap
		b := connect()
		if err := b.Barrier(); err != nil {
			return 96
		}
		if rank == 1 {
			return 0
		}
		return hang()
	case "shm": // fill the job's directory, then PE 0 crashes
		dir := core.JobDir(nil, os.Getenv(bootstrap.EnvJobID))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "heap-"+strconv.Itoa(rank)), []byte("data"), 0o600)
		b := connect()
		b.Barrier()
		if rank == 1 {
			heaps, _ := filepath.Glob(filepath.Join(dir, "heap-*"))
			owners, _ := filepath.Glob(filepath.Join(dir, "owner.*"))
			fmt.Printf("the job directory holds %d heaps and %d owner\n", len(heaps), len(owners))
		}
		b.Barrier()
		if rank == 0 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		b.Barrier()
		return hang()
	case "globalexit": // PE args[0] calls global_exit(args[1]), or the library ends the job for args[2]; the others wait
		b := connect()
		if err := b.Barrier(); err != nil {
			return 96
		}
		caller, _ := strconv.Atoi(args[0])
		status, _ := strconv.Atoi(args[1])
		reason := ""
		if len(args) > 2 {
			reason = args[2]
		}
		dir := core.JobDir(nil, os.Getenv(bootstrap.EnvJobID))
		if rank == caller {
			if err := globalexit.WriteReason(dir, rank, status, reason); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 97
			}
			if len(args) > 3 && args[3] == "swept" {
				if err := sweptBehind(dir); err != nil {
					fmt.Fprintln(os.Stderr, "child:", err)
					return 98
				}
			}
			return status
		}
		return hang()
	case "sweep": // another job's process, sweeping the dead jobs' directories
		core.SweepJobDirs(nil)
		return 0
	case "hang":
		if len(args) > 0 && args[0] == "ignoreterm" {
			signal.Ignore(syscall.SIGTERM)
		}
		fmt.Println("ready")
		return hang()
	case "agent": // oshrun's agent on a "remote" host reached by fakeRsh
		return RunAgent(context.Background(), os.Stdin, os.Stdout, os.Stderr)
	case "launcher": // a launcher of hanging PEs, for the test that kills it
		np, _ := strconv.Atoi(args[0])
		code, _ := Run(context.Background(), Options{
			NP: np, Program: os.Args[0], Args: []string{"ignoreterm"},
			Env:     []string{roleEnv + "=hang"},
			Started: func(pe, pid int) { fmt.Printf("pid %d\n", pid) },
		})
		return code
	}
	fmt.Fprintln(os.Stderr, "unknown role", role)
	return 99
}

// syncBuffer is a bytes.Buffer safe for the launcher's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	code           int
	err            error
	stdout, stderr string
	pids           []int
	took           time.Duration
}

// launch runs a job of the test binary in role; it checks afterwards that
// no PE is left running.
func launch(t *testing.T, ctx context.Context, np int, role string, args []string, edit ...func(*Options)) result {
	t.Helper()
	var stdout, stderr syncBuffer
	var pids []int
	o := Options{
		NP: np, Program: os.Args[0], Args: args,
		// Under -race, a child would otherwise linger a second at exit.
		Env:    []string{roleEnv + "=" + role, core.EnvShmDir + "=" + t.TempDir(), "GORACE=atexit_sleep_ms=0"},
		Stdout: &stdout, Stderr: &stderr,
		Grace:   time.Second,
		Started: func(pe, pid int) { pids = append(pids, pid) },
	}
	for _, f := range edit {
		f(&o)
	}
	start := time.Now()
	code, err := Run(ctx, o)
	r := result{code: code, err: err, stdout: stdout.String(), stderr: stderr.String(), pids: pids, took: time.Since(start)}
	for _, pid := range pids {
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "PE pid %d still exists after Run returned", pid)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	return r
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"all zero", nil, 0},
		{"one fails", []string{"0", "3", "0"}, 3},
		{"pe 0 fails", []string{"7"}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := launch(t, context.Background(), 3, "exit", tc.args)
			require.NoError(t, r.err)
			require.Equal(t, tc.want, r.code)
			require.Len(t, r.pids, 3)
			if tc.want != 0 {
				require.Regexp(t, fmt.Sprintf(`oshrun: PE \d \(pid \d+\) exited with status %d`, tc.want), r.stderr)
			}
		})
	}
}

func TestBootstrapJob(t *testing.T) {
	r := launch(t, context.Background(), 4, "bootstrap", nil, func(o *Options) { o.Verbose = true })
	require.NoError(t, r.err)
	require.Equal(t, 0, r.code, r.stderr)
	for pe := range 4 {
		require.Contains(t, r.stdout, fmt.Sprintf("PE %d of 4: job ", pe))
		require.Regexp(t, fmt.Sprintf(`PE %d (\(pid \d+\) )?finalized`, pe), r.stderr)
	}
	require.Regexp(t, `oshrun: job [0-9a-f]{16}: 4 PEs of .*, bootstrap store at 127\.0\.0\.1:\d+`, r.stderr)
}

func TestPEKilledBySignalEndsJob(t *testing.T) {
	for _, mode := range []string{"", "ignoreterm"} {
		t.Run("others"+mode, func(t *testing.T) {
			r := launch(t, context.Background(), 3, "killself", []string{"1", mode},
				func(o *Options) { o.Grace = 500 * time.Millisecond })
			require.NoError(t, r.err)
			require.Equal(t, 128+int(syscall.SIGKILL), r.code)
			require.Less(t, r.took, 10*time.Second)
			line := fmt.Sprintf("oshrun: PE 1 (pid %d) was killed by signal 9 (killed); terminating the job", r.pids[1])
			require.Contains(t, r.stderr, line)
			require.Equal(t, 1, strings.Count(r.stderr, "oshrun:"), "one line names the cause")
		})
	}
}

func TestPELeavingWithoutFinalizingEndsJob(t *testing.T) {
	r := launch(t, context.Background(), 3, "unfinalized", nil)
	require.NoError(t, r.err)
	require.Equal(t, ExitLost, r.code)
	require.Contains(t, r.stderr, fmt.Sprintf("PE 1 (pid %d) exited with status 0 without finalizing", r.pids[1]))
}

func TestTaggedOutputIsLinePrefixed(t *testing.T) {
	const np = 4
	r := launch(t, context.Background(), np, "print", nil, func(o *Options) { o.Tag = true })
	require.NoError(t, r.err)
	require.Equal(t, 0, r.code)
	line := regexp.MustCompile(`^\[pe (\d)\] (?:hello from pe (\d) line (\d+) x*|tail-(\d))$`)
	count := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "mangled line %q", l)
		if m[2] != "" {
			require.Equal(t, m[1], m[2], "line %q tagged with another PE", l)
		} else {
			require.Equal(t, m[1], m[4])
		}
		count[m[1]]++
	}
	for pe := range np {
		require.Equal(t, 201, count[strconv.Itoa(pe)], "lines of PE %d", pe)
		require.Contains(t, r.stderr, fmt.Sprintf("[pe %d] err from pe %d\n", pe, pe))
	}
}

// With BindCore each PE runs on its own CPU, and PEs beyond the CPUs are
// dealt round them again; with BindShare each runs on its share where
// they fit, on all of them where they do not; unbound, on all of them.
func TestCPUBind(t *testing.T) {
	cpus, err := sys.CPUs()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs 2 CPUs to bind 2 PEs to (have %v, %v)", cpus, err)
	}
	np := len(cpus) + 1
	r := launch(t, context.Background(), np, "cpus", nil, func(o *Options) { o.CPUBind = BindCore })
	require.NoError(t, r.err)
	for pe := range np {
		require.Contains(t, r.stdout, fmt.Sprintf("PE %d: %d\n", pe, cpus[pe%len(cpus)]))
	}
	r = launch(t, context.Background(), 2, "cpus", nil, func(o *Options) { o.CPUBind = BindShare })
	require.NoError(t, r.err)
	sets := cpuSets(BindShare, cpus, 2)
	for pe, set := range sets {
		require.Contains(t, r.stdout, fmt.Sprintf("PE %d: %s\n", pe, cpuList(set)))
	}
	r = launch(t, context.Background(), np, "cpus", nil, func(o *Options) { o.CPUBind = BindShare })
	require.NoError(t, r.err)
	require.Contains(t, r.stdout, fmt.Sprintf("PE 0: %s\n", cpuList(cpus)), "more PEs than CPUs: unbound")
	r = launch(t, context.Background(), 2, "cpus", nil)
	require.NoError(t, r.err)
	require.Contains(t, r.stdout, fmt.Sprintf("PE 1: %s\n", cpuList(cpus)), "unbound by default")
}

// cpuList formats CPUs as the kernel's Cpus_allowed_list does: runs of
// consecutive CPUs as first-last.
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func TestCPUSets(t *testing.T) {
	cpus := []int{0, 1, 2, 3, 4, 5, 6, 7}
	require.Equal(t, [][]int{{0, 1}, {2, 3, 4}, {5, 6, 7}}, cpuSets(BindShare, cpus, 3))
	require.Equal(t, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}, cpuSets(BindShare, cpus, 2))
	require.Equal(t, [][]int{{0}, {1}}, cpuSets(BindShare, cpus[:2], 2))
	require.Nil(t, cpuSets(BindShare, cpus[:2], 3), "more PEs than CPUs")
	require.Equal(t, [][]int{{0}, {1}, {0}}, cpuSets(BindCore, cpus[:2], 3))
	require.Nil(t, cpuSets(BindNone, cpus, 2))
	require.Nil(t, cpuSets("", cpus, 2))
	require.Nil(t, cpuSets(BindShare, nil, 2))
	for _, b := range Bindings {
		got, err := ParseBinding(string(b))
		require.NoError(t, err)
		require.Equal(t, b, got)
	}
	_, err := ParseBinding("socket")
	require.ErrorContains(t, err, `"socket" is not one of share, core, none`)
}

func TestUntaggedOutputPassesThrough(t *testing.T) {
	r := launch(t, context.Background(), 1, "args", []string{"-rounds", "3", "x y"})
	require.NoError(t, r.err)
	require.Equal(t, "args=[\"-rounds\" \"3\" \"x y\"]\n", r.stdout)
}

func TestJobDirRemovedAfterCrash(t *testing.T) {
	shm := t.TempDir()
	r := launch(t, context.Background(), 3, "shm", nil, func(o *Options) {
		o.Env = append(o.Env, core.EnvShmDir+"="+shm)
	})
	require.NoError(t, r.err)
	require.Equal(t, 128+int(syscall.SIGKILL), r.code)
	// The launcher owns the directory while the job runs.
	require.Contains(t, r.stdout, "the job directory holds 3 heaps and 1 owner")
	left, err := os.ReadDir(shm)
	require.NoError(t, err)
	require.Empty(t, left, "the job's directory must be removed")
}

func TestCancelEndsEveryPE(t *testing.T) {
	for _, mode := range []string{"", "ignoreterm"} {
		t.Run("pes"+mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const np = 3
			var ready syncBuffer
			r := launch(t, ctx, np, "hang", []string{mode}, func(o *Options) {
				o.Grace = 300 * time.Millisecond
				// Cancel once every PE is up and hanging.
				o.Stdout = writerFunc(func(p []byte) (int, error) {
					ready.Write(p)
					if strings.Count(ready.String(), "ready\n") == np {
						cancel()
					}
					return len(p), nil
				})
			})
			require.ErrorIs(t, r.err, context.Canceled)
			require.Equal(t, ExitInterrupted, r.code)
			require.Contains(t, r.stderr, "oshrun: interrupted (context canceled); terminating the job (3 PEs still running)")
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestUsageErrorsStartNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no PEs", Options{NP: 0, Program: os.Args[0]}, "at least 1"},
		{"negative PEs", Options{NP: -2, Program: os.Args[0]}, "at least 1"},
		{"no program", Options{NP: 1}, "no program"},
		{"program not found", Options{NP: 1, Program: "goshmem-no-such-program"}, "not found"},
		{"program not executable", Options{NP: 1, Program: "/etc/passwd"}, "permission denied"},
		{"bad env", Options{NP: 1, Program: os.Args[0], Env: []string{"NOEQUALS"}}, "KEY=VALUE"},
		{"bad bind", Options{NP: 1, Program: os.Args[0], Bind: "localhost"}, "missing port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := false
			tc.o.Started = func(int, int) { started = true }
			code, err := Run(context.Background(), tc.o)
			require.ErrorIs(t, err, core.ErrInvalid)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, ExitUsage, code)
			require.False(t, started)
		})
	}
}

func TestChildEnvironment(t *testing.T) {
	t.Setenv(bootstrap.EnvSecretFile, "/inherited/secret") // from an enclosing job: must not leak
	t.Setenv(bootstrap.EnvRank, "7")
	env := childEnv(Options{NP: 2, Provider: "loopback", Env: []string{"A=1", bootstrap.EnvSize + "=99"}},
		"jid", []byte{1, 2}, "127.0.0.1:5")
	look := envLookup(env)
	for k, want := range map[string]string{
		"A": "1", bootstrap.EnvSize: "2", bootstrap.EnvJobID: "jid", bootstrap.EnvBootstrap: "127.0.0.1:5",
		bootstrap.EnvSecret: "0102", core.EnvProvider: "loopback",
	} {
		v, ok := look(k)
		require.True(t, ok, k)
		require.Equal(t, want, v, k)
	}
	for _, k := range []string{bootstrap.EnvSecretFile, bootstrap.EnvRank} {
		_, ok := look(k)
		require.False(t, ok, "%s inherited", k)
	}
}

// Each PE gets its share of the CPUs, at least one, unless the user chose.
func TestChildEnvironmentGOMAXPROCS(t *testing.T) {
	defer func(f func() int) { numCPU = f }(numCPU)
	numCPU = func() int { return 2 }
	get := func(np int, extra ...string) (string, bool) {
		return envLookup(childEnv(Options{NP: np, Env: extra}, "jid", []byte{1}, "127.0.0.1:5"))("GOMAXPROCS")
	}
	t.Setenv("GOMAXPROCS", "") // restored afterwards; unset for the test
	os.Unsetenv("GOMAXPROCS")
	v, ok := get(4)
	require.True(t, ok)
	require.Equal(t, "1", v)
	v, _ = get(2)
	require.Equal(t, "1", v, "2 PEs on 2 CPUs get one each")
	v, _ = get(1)
	require.Equal(t, "2", v, "a single PE gets both")
	v, _ = get(4, "GOMAXPROCS=3")
	require.Equal(t, "3", v, "the user's choice wins")
}

// Each PE is told how many CPUs the job shares, unless the user said.
func TestChildEnvironmentCPUs(t *testing.T) {
	defer func(f func() int) { numCPU = f }(numCPU)
	numCPU = func() int { return 6 }
	get := func(extra ...string) string {
		v, _ := envLookup(childEnv(Options{NP: 4, Env: extra}, "jid", []byte{1}, "127.0.0.1:5"))(core.EnvCPUs)
		return v
	}
	t.Setenv(core.EnvCPUs, "")
	os.Unsetenv(core.EnvCPUs)
	require.Equal(t, "6", get())
	require.Equal(t, "3", get(core.EnvCPUs+"=3"), "the user's choice wins")
}

func TestAdvertise(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:80": "127.0.0.1:80", "[::]:80": "127.0.0.1:80", "10.1.2.3:80": "10.1.2.3:80", "[::1]:80": "[::1]:80",
	} {
		a, err := net.ResolveTCPAddr("tcp", in)
		require.NoError(t, err)
		require.Equal(t, want, advertise(a), in)
	}
}

// TestKilledLauncherTakesItsPEs kills a launcher with SIGKILL: its PEs,
// which even ignore SIGTERM, must die with it (Pdeathsig).
func TestKilledLauncherTakesItsPEs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	const np = 2
	cmd := exec.Command(os.Args[0], strconv.Itoa(np))
	cmd.Env = append(os.Environ(), roleEnv+"=launcher")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var pids []int
	sc := bufio.NewScanner(out)
	for len(pids) < np && sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, err := strconv.Atoi(p)
			require.NoError(t, err)
			pids = append(pids, pid)
		}
	}
	require.Len(t, pids, np)
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	for _, pid := range pids {
		require.Eventually(t, func() bool { return gone(pid) }, 10*time.Second, 5*time.Millisecond,
			"PE pid %d outlived its launcher", pid)
	}
}

// gone reports whether pid no longer runs: absent, or a zombie waiting for
// a reaper that is not us.
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

func TestCancelledBeforeStartStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	started := false
	code, err := Run(ctx, Options{NP: 2, Program: os.Args[0], Started: func(int, int) { started = true }})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, ExitInterrupted, code)
	require.False(t, started)
}
