package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// SyncBuffer is a bytes.Buffer that a child process's output goroutine
// writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// KilledPE is a job of PE processes one of which is killed with SIGKILL
// while the others work: every other PE must fail, naming the lost PE,
// within a bound, instead of waiting for it. The PEs are the test binary
// itself, whose TestMain must call Main.
type KilledPE struct {
	// Provider is what the PEs select (core.EnvProvider).
	Provider string
	// NPEs is the job's size, at least 2.
	NPEs int
	// PEsPerHost, if not 0, makes the PEs pose as running on hosts of
	// that many PEs each, as Harness.PEsPerHost does; 0 leaves every PE
	// on the host it runs on.
	PEsPerHost int
	// Victim is the PE that is killed.
	Victim int
	// Env adds environment variables (provider parameters, such as the
	// provider's timeout) for the PEs.
	Env map[string]string
	// Composite, if not "", is the provider name PE 0 must report (e.g.
	// "tcp+loopback"), so the test cannot pass on another composition.
	Composite string
	// Bound is how soon after the kill every other PE must have failed;
	// 0 means 30 s.
	Bound time.Duration
}

// The environment of a KilledPE child: the victim's rank and PEsPerHost.
const (
	envKilledVictim  = "GOSHMEM_CONFORMANCE_KILLED_VICTIM"
	envKilledPerHost = "GOSHMEM_CONFORMANCE_KILLED_PES_PER_HOST"
)

// The killed-PE case's variables, in the registry (core.Declare).
var (
	killedVictimParam = core.Declare(core.Param{Env: envKilledVictim, Kind: core.KindInt,
		Help: "set by the conformance harness: the PE a killed-PE case's job loses"})[0]
	killedPerHostParam = core.Declare(core.Param{Env: envKilledPerHost, Kind: core.KindInt, Default: "0",
		Help: "set by the conformance harness: how many PEs of a killed-PE case's job share a host (0: all)"})[0]
)

// What a KilledPE child prints: the victim once it waits to be killed,
// every other PE its error once it has one.
const (
	killedReady = "ready"
	killedError = "error: "
)

// ChildEnv is the environment, added to the test's own, that makes the
// test binary run as one PE of k's job: for tests that start the PEs
// their own way (with the job's bootstrap variables), then call
// KillAndCheck.
func (k KilledPE) ChildEnv() []string {
	env := []string{
		envKilledVictim + "=" + strconv.Itoa(k.Victim),
		envKilledPerHost + "=" + strconv.Itoa(k.PEsPerHost),
		core.EnvProvider + "=" + k.Provider,
		// Race-built children would otherwise linger a second at exit.
		"GORACE=atexit_sleep_ms=0",
		// A PE that never reports its error is sent SIGQUIT: every
		// goroutine's stack shows where it waits.
		"GOTRACEBACK=all",
	}
	keys := make([]string, 0, len(k.Env))
	for key := range k.Env {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		env = append(env, key+"="+k.Env[key])
	}
	return env
}

func (k KilledPE) bound() time.Duration {
	if k.Bound == 0 {
		return 30 * time.Second
	}
	return k.Bound
}

// RunKilledPE runs k's job on this host: NPEs processes of the test
// binary joined through a bootstrap server of the test's, then
// KillAndCheck.
func RunKilledPE(t *testing.T, k KilledPE) {
	t.Helper()
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	n := k.NPEs
	if n < 2 {
		t.Fatalf("conformance: KilledPE.NPEs is %d; a job with a killed PE and a survivor needs at least 2", n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	srv := bootstrap.NewServer(ln, n, secret)
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	defer func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-served)
	}()
	jobID, err := bootstrap.NewJobID()
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := append(os.Environ(), k.ChildEnv()...)
	env = append(env,
		bootstrap.EnvSize+"="+strconv.Itoa(n),
		bootstrap.EnvJobID+"="+jobID,
		bootstrap.EnvBootstrap+"="+ln.Addr().String(),
		bootstrap.EnvSecret+"="+hex.EncodeToString(secret),
		core.EnvShmDir+"="+ShmDir(t))
	outs := make([]SyncBuffer, n)
	cmds := make([]*exec.Cmd, n)
	stdins := make([]io.WriteCloser, n)
	defer reap(cmds)
	for rank := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(env[:len(env):len(env)], bootstrap.EnvRank+"="+strconv.Itoa(rank))
		cmd.Stdout, cmd.Stderr = &outs[rank], &outs[rank]
		stdins[rank], err = cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start(), "PE %d", rank)
		cmds[rank] = cmd
	}
	k.KillAndCheck(t, cmds, outs, stdins)
}

// KillAndCheck checks k's job, its PEs started (cmds[i] PE i, outs[i] its
// output, stdins[i] its input, with ChildEnv in their environment): it
// waits until the victim is ready, kills it with SIGKILL, waits (bounded)
// until every other PE has its error, then lets them go by closing their
// inputs, waits for them and checks that each failed within k's bound
// naming the victim. Survivors stay until then, so that one that left
// early is not reported lost by one that has not failed yet. Every PE
// still running when it returns is killed.
func (k KilledPE) KillAndCheck(t *testing.T, cmds []*exec.Cmd, outs []SyncBuffer, stdins []io.WriteCloser) {
	t.Helper()
	defer reap(cmds)
	n, v := len(cmds), k.Victim
	if len(outs) != n || len(stdins) != n {
		t.Fatalf("conformance: %d commands, %d outputs and %d inputs; want one of each per PE", n, len(outs), len(stdins))
	}
	if v < 0 || v >= n {
		t.Fatalf("conformance: KilledPE.Victim is %d, not a PE of the %d-PE job (0 to %d)", v, n, n-1)
	}
	require.Eventually(t, func() bool { return strings.Contains(outs[v].String(), killedReady) },
		time.Minute, 10*time.Millisecond, "PE %d, the victim, never got ready:\n%s", v, &outs[v])
	if k.Composite != "" {
		require.Contains(t, outs[0].String(), "provider "+k.Composite)
	}

	require.NoError(t, cmds[v].Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	silent := func() []int {
		var ranks []int
		for rank := range n {
			if rank != v && !strings.Contains(outs[rank].String(), killedError) {
				ranks = append(ranks, rank)
			}
		}
		return ranks
	}
	for deadline := killed.Add(time.Minute); len(silent()) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			// Each silent PE prints its goroutines (GOTRACEBACK=all in
			// ChildEnv) and exits 2; one that had left on its own
			// exited 0 or 1.
			ranks := silent()
			var b strings.Builder
			for _, rank := range ranks {
				_ = cmds[rank].Process.Signal(syscall.SIGQUIT)
			}
			for _, rank := range ranks {
				fmt.Fprintf(&b, "PE %d (%v):\n%s\n", rank, waitBounded(cmds[rank], 10*time.Second), &outs[rank])
			}
			t.Fatalf("a minute after PE %d was killed, these PEs have not reported an error:\n%s", v, &b)
		}
	}
	took := time.Since(killed)
	for rank := range n {
		if rank == v {
			continue
		}
		require.NoError(t, stdins[rank].Close())
		err := cmds[rank].Wait()
		require.NoError(t, err, "PE %d:\n%s", rank, &outs[rank])
		require.Contains(t, outs[rank].String(), fmt.Sprintf("PE %d", v), "PE %d names the lost PE", rank)
		t.Logf("PE %d: %s", rank, strings.TrimSpace(outs[rank].String()))
	}
	t.Logf("every PE failed within %v of the kill", took.Round(time.Millisecond))
	require.Less(t, took, k.bound(), "every PE fails within the bound")
}

// waitBounded waits for cmd, killing it after d, and returns how it
// ended.
func waitBounded(cmd *exec.Cmd, d time.Duration) error {
	t := time.AfterFunc(d, func() { _ = cmd.Process.Kill() })
	defer t.Stop()
	return cmd.Wait()
}

// reap kills and waits for every started PE not waited for yet.
func reap(cmds []*exec.Cmd) {
	for _, c := range cmds {
		if c != nil && c.Process != nil && c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}

// killedChildMain runs this process as one PE of a KilledPE job, the
// victim's rank given, and returns its exit code.
func killedChildMain(victim string) int {
	v, err := strconv.Atoi(victim)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %s=%q: want the killed PE's number: %v\n", envKilledVictim, victim, err)
		return 2
	}
	perV, _ := killedPerHostParam.Raw(nil)
	per, err := strconv.Atoi(perV)
	if err != nil || per < 0 {
		fmt.Fprintf(os.Stderr, "conformance: %s=%q: want 0 or more PEs per host\n", envKilledPerHost, perV)
		return 2
	}
	host := ""
	if per > 0 {
		job, launched, err := bootstrap.JobFromEnv(os.LookupEnv)
		if err != nil || !launched {
			fmt.Fprintf(os.Stderr, "conformance: killed-PE job: not started as a PE of a job (%v)\n", err)
			return 2
		}
		host = (&Harness{PEsPerHost: per}).hostID(job.Rank)
	}
	// killedPE ends the process itself; it returns only where the job
	// could not get as far as the kill.
	err = killedPE(v, host)
	fmt.Fprintf(os.Stderr, "conformance: killed-PE job: %v\n", err)
	return 1
}

// killedPE is one PE of a KilledPE job: the victim says it is ready and
// waits to be killed; every other PE runs barriers and gets from every
// PE until one fails, says how, and leaves without finalizing (the job
// cannot finalize), once the test closes its input (one started without
// an input reads none). It returns only an error that came before that.
func killedPE(victim int, host string) error {
	w, err := shmem.Init(shmem.WithHostID(host))
	if err != nil {
		return err
	}
	fmt.Printf("provider %s\n", w.Provider())
	buf, err := shmem.Malloc[int64](w, 1)
	if err != nil {
		return fmt.Errorf("PE %d: %w", w.MyPE(), err)
	}
	// The victim may leave this barrier, say it is ready and be killed
	// while the others still wait in it (a tree's root releases its
	// children one by one): their barrier then fails as a later one
	// would.
	err = w.BarrierAll()
	if w.MyPE() == victim {
		if err != nil {
			return fmt.Errorf("PE %d: %w", w.MyPE(), err)
		}
		fmt.Println(killedReady)
		select {} // until the test kills this process
	}
	for err == nil {
		for pe := range w.NPEs() {
			if _, err = shmem.G(w, &buf[0], pe); err != nil {
				break
			}
		}
		if err == nil {
			err = w.BarrierAll()
		}
	}
	fmt.Printf("%s%v\n", killedError, err)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
	panic("unreachable")
}
