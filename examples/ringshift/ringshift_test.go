package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/examples/internal/exampletest"
)

func TestRingshiftFourPEs(t *testing.T) {
	oshrun, ringshift := exampletest.Build(t, "github.com/goshmem/goshmem/examples/ringshift")
	cmd := exec.Command(oshrun, "-np", "4", ringshift, "-rounds", "1000")
	cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `ringshift: 4 PEs, 1000 rounds of 8192 bytes over loopback: verified`, string(out))
}

// A PE killed with SIGKILL in the middle of the job makes oshrun end the
// whole job, non-zero, naming the PE, well within 10 seconds.
func TestRingshiftKilledPEEndsJob(t *testing.T) {
	oshrun, ringshift := exampletest.Build(t, "github.com/goshmem/goshmem/examples/ringshift")
	cmd := exec.Command(oshrun, "-v", "-np", "4", ringshift, "-rounds", "100000000")
	cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()

	// Wait until every PE has joined the job, so the kill lands mid-run.
	pids := map[int]int{}
	var log bytes.Buffer
	pidLine := regexp.MustCompile(`PE (\d+): pid (\d+)`)
	sc := bufio.NewScanner(stderr)
	joined := 0
	for joined < 4 && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := pidLine.FindStringSubmatch(sc.Text()); m != nil {
			pe, _ := strconv.Atoi(m[1])
			pids[pe], _ = strconv.Atoi(m[2])
		}
		if regexp.MustCompile(`PE \d+ joined`).MatchString(sc.Text()) {
			joined++
		}
	}
	require.Equal(t, 4, joined, "PEs never joined:\n%s", log.String())
	victim := pids[2]
	require.NotZero(t, victim)

	killed := time.Now()
	require.NoError(t, syscall.Kill(victim, syscall.SIGKILL))
	// Wait reads the rest of stderr after the process exits; the reader
	// ends when oshrun closes it.
	rest := make(chan struct{})
	go func() {
		defer close(rest)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
	}()
	done := make(chan error, 1)
	go func() { <-rest; done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "oshrun must exit non-zero")
		require.Less(t, time.Since(killed), 10*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatalf("oshrun still running 10s after PE 2 was killed")
	}
	require.Contains(t, log.String(), "PE 2")
	require.Contains(t, log.String(), "killed")
	for pe, pid := range pids {
		require.Error(t, syscall.Kill(pid, 0), "PE %d (pid %d) outlived the job", pe, pid)
	}
}

// A ring link that goes down while every PE still lives ends the job with
// the peer-lost error instead of leaving PEs waiting for data that can no
// longer come.
func TestRingshiftNTBLinkDownEndsJob(t *testing.T) {
	oshrun, ringshift := exampletest.Build(t, "github.com/goshmem/goshmem/examples/ringshift")
	// Should the job hang, the deadline ends oshrun, and its PEs with it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, oshrun, "-np", "5", ringshift, "-rounds", "100000000")
	cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir(), "GOSHMEM_PROVIDER=ntbring",
		"GOSHMEM_NTBRING_PROTOCOL=seed", "GOSHMEM_NTB_FAULT=link=2:down@500ms")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "oshrun must exit non-zero:\n%s", out)
	require.NoError(t, ctx.Err(), "the job hung:\n%s", out)
	require.Less(t, time.Since(start), 20*time.Second)
	require.Regexp(t, `ringshift: round \d+: .*lost`, string(out))
}

// onEmulatedHosts returns the command that runs ringshift under oshrun as
// a job of hosts x per PEs on emulated hosts of this machine: a shell
// names each PE's host from its rank (GOSHMEM_EMULATED_HOST), per PEs to
// a host in rank order, as a launcher placing per PEs on each host would,
// then becomes ringshift. env adds to the job's environment.
func onEmulatedHosts(ctx context.Context, t *testing.T, oshrun, ringshift string, hosts, per int, env []string, args ...string) *exec.Cmd {
	script := fmt.Sprintf(`GOSHMEM_EMULATED_HOST=emu$((GOSHMEM_RANK / %d)) exec "$0" "$@"`, per)
	cmd := exec.CommandContext(ctx, oshrun, append([]string{"-np", strconv.Itoa(hosts * per), "sh", "-c", script, ringshift}, args...)...)
	cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir(), "SHMEM_INFO=1",
		// The heap is not what ringshift tests: a small one opens fast.
		"SHMEM_SYMMETRIC_SIZE=32M")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// hostsLine is what SHMEM_INFO prints of hosts x per PEs, per to a host.
func hostsLine(hosts, per int) string {
	parts := make([]string, hosts)
	for h := range parts {
		parts[h] = fmt.Sprintf("host %d: PEs %d-%d", h, h*per, h*per+per-1)
	}
	return strings.Join(parts, ", ")
}

// GOSHMEM_PROVIDER=ntbring with several PEs per host, as a launched job:
// 2, 3 and 4 emulated hosts of 2 PEs, each PE the node of its lane of its
// host's emulated device, loopback between the PEs of a host, every block
// of every round checked; then a ring link cut and mended under the
// rounds of 4 hosts of 2 PEs.
func TestRingshiftNTBRingHostsOfTwo(t *testing.T) {
	oshrun, ringshift := exampletest.Build(t, "github.com/goshmem/goshmem/examples/ringshift")
	for _, hosts := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("%dx2", hosts), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := onEmulatedHosts(ctx, t, oshrun, ringshift, hosts, 2, []string{"GOSHMEM_PROVIDER=ntbring"}, "-rounds", "100")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "ntbring between hosts, loopback between PEs of one host; "+hostsLine(hosts, 2))
			require.Contains(t, string(out), fmt.Sprintf("ringshift: %d PEs, 100 rounds of 8192 bytes over ntbring+loopback: verified", 2*hosts))
		})
	}
	t.Run("4x2 link cut", func(t *testing.T) { testRingshiftLinkCut(t, oshrun, ringshift) })
}

// A ring link cut while 4 emulated hosts of 2 PEs shift blocks, then
// mended: every lane of both hosts routes round the cut and back, and
// ringshift checks every block of every round (a block lost, or one
// repeated late into a later round of its parity, shows as a wrong
// word). The cut must overlap the rounds: a run that ended before the
// link was mended is run again with more rounds, one whose rounds began
// only after it with later faults.
func testRingshiftLinkCut(t *testing.T, oshrun, ringshift string) {
	const hosts, per = 4, 2
	rounds, down := 1000, 300*time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		fault := fmt.Sprintf("GOSHMEM_NTB_FAULT=link=1:down@%v;link=1:up@%v", down, 2*down)
		cmd := onEmulatedHosts(ctx, t, oshrun, ringshift, hosts, per,
			[]string{"GOSHMEM_PROVIDER=ntbring", "SHMEM_DEBUG=1", fault}, "-rounds", strconv.Itoa(rounds))
		out, err := cmd.CombinedOutput()
		cancel()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), fmt.Sprintf("ringshift: %d PEs, %d rounds of 8192 bytes over ntbring+loopback: verified", hosts*per, rounds))
		cut, mended, began := logTimes(t, out, "ntbring: the ring is cut, routing round it"),
			logTimes(t, out, "ntbring: the ring is whole again"), logTimes(t, out, "initialized")
		require.Len(t, began, hosts*per, "every PE initialized:\n%s", out)
		require.Len(t, cut, hosts*per, "every PE routes round the cut:\n%s", out)
		switch {
		case len(mended) == 0 && try < 3:
			t.Logf("run %d: the job ended before the link was mended (%d rounds); again with more", try, rounds)
			rounds *= 4
			continue
		case len(mended) > 0 && latest(mended).Before(latest(began)) && try < 3:
			t.Logf("run %d: the link was mended before the rounds began (faults at %v); again with later ones", try, down)
			down *= 3
			rounds *= 2
			continue
		}
		require.Len(t, mended, hosts*per, "every PE routes the short way again:\n%s", out)
		require.True(t, latest(mended).After(latest(began)), "the cut overlaps the rounds:\n%s", out)
		t.Logf("run %d: %d rounds; link 1 cut from %v to %v, the rounds from %v", try, rounds,
			slices.MinFunc(cut, time.Time.Compare).Format(time.StampMilli), latest(mended).Format(time.StampMilli),
			latest(began).Format(time.StampMilli))
		return
	}
}

func latest(ts []time.Time) time.Time { return slices.MaxFunc(ts, time.Time.Compare) }

// logTimes returns the times of the log lines in out whose message is msg.
func logTimes(t *testing.T, out []byte, msg string) []time.Time {
	t.Helper()
	line := regexp.MustCompile(`(?m)^time=(\S+) level=\S+ msg="?` + regexp.QuoteMeta(msg) + `"?( |$)`)
	var times []time.Time
	for _, m := range line.FindAllSubmatch(out, -1) {
		at, err := time.Parse(time.RFC3339Nano, string(m[1]))
		require.NoError(t, err, "%s", m[0])
		times = append(times, at)
	}
	return times
}
