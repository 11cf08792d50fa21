package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sshHosts is two hosts as far as a job can tell: each a network, UTS and
// mount namespace with its own address (a veth pair joins them), its own
// hostname, its own /dev/shm, and an sshd that lets the test's key in.
// The namespaces live as long as their sshd, whose pid commands enter.
type sshHosts struct {
	names [2]string
	addrs [2]string
	netns [2]string
	sshd  [2]*exec.Cmd
	dir   string
	rsh   string // GOSHMEM_RSH for jobs on these hosts
	bin   string // where oshrun and ringshift are
}

func need(t *testing.T, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed (.ci/run installs iproute2, util-linux, openssh-server and openssh-client); jobs across hosts over ssh are not tested", c)
		}
	}
}

func newSSHHosts(t *testing.T) *sshHosts {
	t.Helper()
	if testing.Short() {
		t.Skip("jobs across namespaced hosts are skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("namespaced hosts need root (ip netns, unshare)")
	}
	need(t, "ip", "unshare", "nsenter", "ssh", "ssh-keygen")
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr != nil {
			t.Skip("sshd is not installed (apt-get install openssh-server)")
		}
		sshd = "/usr/sbin/sshd"
	}

	var b [3]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	subnet := fmt.Sprintf("10.%d.%d", 100+int(b[0])%100, b[1])
	h := &sshHosts{
		names: [2]string{"gsh" + tag + "a", "gsh" + tag + "b"},
		addrs: [2]string{subnet + ".1", subnet + ".2"},
		netns: [2]string{"gshmem-ssh-" + tag + "-a", "gshmem-ssh-" + tag + "-b"},
		dir:   t.TempDir(),
	}
	run := func(name string, args ...string) {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Skipf("cannot make namespaced hosts here: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	for i, ns := range h.netns {
		run("ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
		// ip netns exec shows this file as the namespace's /etc/hosts.
		etc := filepath.Join("/etc/netns", ns)
		require.NoError(t, os.MkdirAll(etc, 0o755))
		t.Cleanup(func() { _ = os.RemoveAll(etc) })
		hosts := fmt.Sprintf("127.0.0.1 localhost\n%s %s\n%s %s\n", h.addrs[0], h.names[0], h.addrs[1], h.names[1])
		require.NoError(t, os.WriteFile(filepath.Join(etc, "hosts"), []byte(hosts), 0o644))
		_ = i
	}
	dev := [2]string{"gs" + tag + "sa", "gs" + tag + "sb"}
	run("ip", "link", "add", dev[0], "netns", h.netns[0], "type", "veth", "peer", "name", dev[1], "netns", h.netns[1])
	for i := range 2 {
		run("ip", "-n", h.netns[i], "addr", "add", h.addrs[i]+"/24", "dev", dev[i])
		run("ip", "-n", h.netns[i], "link", "set", dev[i], "up")
		run("ip", "-n", h.netns[i], "link", "set", "lo", "up")
	}

	// Keys made here: one for the hosts, one for the user.
	key := filepath.Join(h.dir, "id")
	hostKey := filepath.Join(h.dir, "hostkey")
	for _, k := range []string{key, hostKey} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	pub, err := os.ReadFile(key + ".pub")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "authorized_keys"), pub, 0o600))
	sshCfg := filepath.Join(h.dir, "ssh_config")
	require.NoError(t, os.WriteFile(sshCfg, []byte(fmt.Sprintf(`Host *
  User root
  IdentityFile %s
  IdentitiesOnly yes
  BatchMode yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  ConnectTimeout 10
`, key)), 0o600))
	h.rsh = "ssh -F " + sshCfg
	// sshd's privilege separation directory.
	require.NoError(t, os.MkdirAll("/run/sshd", 0o755))

	for i := range 2 {
		cfg := filepath.Join(h.dir, fmt.Sprintf("sshd_config%d", i))
		require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress %s
Port 22
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
`, h.addrs[i], hostKey, filepath.Join(h.dir, "authorized_keys"))), 0o600))
		script := `hostname "$1" && mount -t tmpfs -o size=1g tmpfs /dev/shm && exec "$2" -D -e -f "$3"`
		cmd := exec.Command("ip", "netns", "exec", h.netns[i], "unshare", "--uts", "--mount", "--propagation", "private",
			"sh", "-c", script, "sh", h.names[i], sshd, cfg)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		h.sshd[i] = cmd
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
		// Ready when it says it listens; its later lines are drained.
		ready := make(chan error, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			var said []string
			for sc.Scan() {
				said = append(said, sc.Text())
				if strings.Contains(sc.Text(), "Server listening on") {
					ready <- nil
					_, _ = io.Copy(io.Discard, stderr)
					return
				}
			}
			ready <- fmt.Errorf("sshd ended: %s", strings.Join(said, "; "))
		}()
		select {
		case err := <-ready:
			if err != nil {
				t.Skipf("cannot run sshd in a namespace here: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("sshd did not start listening within 30 s")
		}
	}

	h.bin = t.TempDir()
	for name, pkg := range map[string]string{"ringshift": ".", "oshrun": "../../cmd/oshrun"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(h.bin, name), pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	return h
}

// on returns a command that runs as on host i: in its namespaces, with
// the environment a job launched there gets.
func (h *sshHosts) on(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	pid := strconv.Itoa(h.sshd[i].Process.Pid)
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", pid, "-n", "-u", "-m", name}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GOSHMEM_") || strings.HasPrefix(k, "SHMEM_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "GOSHMEM_RSH="+h.rsh, "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// shmLeft lists what host i has in /dev/shm.
func (h *sshHosts) shmLeft(t *testing.T, i int) string {
	t.Helper()
	out, err := h.on(context.Background(), i, "ls", "-A", "/dev/shm").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.TrimSpace(string(out))
}

// shmLeftAfter is shmLeft once it is empty, or after within: the
// launcher or agent that owns a job's directory removes it just after
// its PEs have exited.
func (h *sshHosts) shmLeftAfter(t *testing.T, i int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := h.shmLeft(t, i)
		if left == "" || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond) // polling files that signal nothing
	}
}

// pidGone reports whether pid has ended (absent or a zombie).
func pidGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// waitAllGone waits (bounded) until every pid has ended.
func waitAllGone(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, pid := range pids {
		for !pidGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("PE pid %d still runs %v after the job ended", pid, within)
			}
			time.Sleep(20 * time.Millisecond) // polling a process that signals nothing
		}
	}
}

var (
	pidLine    = regexp.MustCompile(`PE (\d+): pid (\d+)`)
	joinedLine = regexp.MustCompile(`PE \d+ joined`)
)

// startJob starts a long ringshift job from host 0 on both hosts, 2 PEs
// each, and returns it once every PE has started, with their pids.
func (h *sshHosts) startJob(t *testing.T, ctx context.Context) (*exec.Cmd, []int, *syncBuf, chan error) {
	t.Helper()
	hosts := h.names[0] + ":2," + h.names[1] + ":2"
	cmd := h.on(ctx, 0, filepath.Join(h.bin, "oshrun"), "-v", "-grace", "1s", "--host", hosts,
		filepath.Join(h.bin, "ringshift"), "-rounds", "1000000000")
	var out syncBuf
	cmd.Stdout = &out
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	require.NoError(t, cmd.Start())
	pids := map[int]int{}
	joined := 0
	running := make(chan []int, 1)
	started := running
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			if m := pidLine.FindStringSubmatch(sc.Text()); m != nil {
				pe, _ := strconv.Atoi(m[1])
				pid, _ := strconv.Atoi(m[2])
				pids[pe] = pid
			}
			if joinedLine.MatchString(sc.Text()) {
				joined++
			}
			// Running: every PE has a pid and has joined the store.
			if started != nil && len(pids) == 4 && joined == 4 {
				list := make([]int, 4)
				for pe, pid := range pids {
					list[pe] = pid
				}
				started <- list
				started = nil
			}
		}
	}()
	done := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); done <- err }()
	var list []int
	select {
	case list = <-running:
	case err := <-done:
		t.Fatalf("the job ended before its PEs started: %v\n%s", err, out.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the PEs did not all start within 2 minutes:\n%s", out.String())
	}
	return cmd, list, &out, done
}

type syncBuf struct {
	mu chan struct{}
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.lock()
	defer s.unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.lock()
	defer s.unlock()
	return s.b.String()
}

func (s *syncBuf) lock() {
	if s.mu == nil {
		s.mu = make(chan struct{}, 1)
	}
	s.mu <- struct{}{}
}
func (s *syncBuf) unlock() { <-s.mu }

// TestOshrunAcrossHostsOverSSH runs ringshift with two PEs on each of two
// namespaced hosts, oshrun on the first starting the second's over ssh;
// then kills a PE on the second host, then oshrun itself, and checks that
// the job ends on both hosts and leaves nothing behind.
func TestOshrunAcrossHostsOverSSH(t *testing.T) {
	h := newSSHHosts(t)
	hosts := h.names[0] + ":2," + h.names[1] + ":2"

	t.Run("ringshift", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := h.on(ctx, 0, filepath.Join(h.bin, "oshrun"), "-tag", "--host", hosts, "-x", "GOSHMEM_PROVIDER=tcp",
			filepath.Join(h.bin, "ringshift"), "-rounds", "20")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		// tcp between the hosts, loopback inside each.
		require.Contains(t, string(out), "[pe 0] ringshift: 4 PEs")
		require.Contains(t, string(out), "over tcp+loopback: verified")
		for i := range 2 {
			require.Empty(t, h.shmLeft(t, i), "host %s keeps files after a clean job", h.names[i])
		}
	})

	t.Run("PE killed on the other host", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_, pids, out, done := h.startJob(t, ctx)
		require.NoError(t, syscall.Kill(pids[3], syscall.SIGKILL))
		err := <-done
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out.String())
		require.Equal(t, 128+int(syscall.SIGKILL), ee.ExitCode(), "%s", out.String())
		require.Regexp(t, fmt.Sprintf(`PE 3 \(pid %d on %s\) was killed by signal 9`, pids[3], h.names[1]), out.String())
		waitAllGone(t, pids, 30*time.Second)
		for i := range 2 {
			require.Empty(t, h.shmLeft(t, i), "host %s keeps files after the job ended", h.names[i])
		}
	})

	t.Run("oshrun killed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd, pids, _, done := h.startJob(t, ctx)
		// nsenter runs oshrun as its child: kill the whole group at once,
		// as a crash would.
		require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
		<-done
		// The remote agent sees its input end and ends its PEs; the local
		// PEs die with oshrun.
		waitAllGone(t, pids, 30*time.Second)
		// The other host's agent removes its files once its PEs are
		// reaped; this host's are removed by the next job.
		require.Empty(t, h.shmLeftAfter(t, 1, 10*time.Second), "host %s keeps files after its launcher died", h.names[1])
		again := h.on(ctx, 0, filepath.Join(h.bin, "oshrun"), "--host", hosts, filepath.Join(h.bin, "ringshift"), "-rounds", "2")
		out, err := again.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Empty(t, h.shmLeft(t, 0), "the next job on %s removes a dead job's files", h.names[0])
	})
}
