package hybrid_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/core"
)

// nsHosts is hosts as far as a job can tell: each a network and UTS
// namespace with its own hostname and address, all joined by veth pairs
// to a bridge in a namespace of their own (a switch), so every host
// reaches every other over real interfaces. Each host gets its own
// directory for shared memory files, as separate hosts have their own
// /dev/shm.
type nsHosts struct {
	ns    []string
	names []string
	addrs []string
	shm   []string
}

// newNSHosts sets k hosts up, or skips the test saying why it cannot; the
// namespaces, and with them the links, are deleted when the test ends.
func newNSHosts(t *testing.T, k int) *nsHosts {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("namespaced hosts need root (ip netns add, unshare --uts)")
	}
	for _, c := range []string{"ip", "unshare", "sh"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed (.ci/run installs iproute2 and util-linux); jobs across namespaced hosts are not tested", c)
		}
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	subnet := fmt.Sprintf("10.%d.%d", 100+int(b[0])%100, b[1])
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	addNS := func(ns string, first bool) {
		if err := ip("netns", "add", ns); err != nil {
			if first {
				t.Skipf("cannot create a network namespace here (%v); this test needs CAP_SYS_ADMIN", err)
			}
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := ip("netns", "delete", ns); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		})
	}
	sw := "gshmem-" + tag + "-sw"
	addNS(sw, true)
	h := &nsHosts{}
	steps := [][]string{
		{"-n", sw, "link", "add", "br0", "type", "bridge"},
		{"-n", sw, "link", "set", "br0", "up"},
	}
	for i := range k {
		ns := fmt.Sprintf("gshmem-%s-%d", tag, i)
		addNS(ns, false)
		dev, port := fmt.Sprintf("gs%s%d", tag, i), fmt.Sprintf("gs%s%dp", tag, i)
		addr := fmt.Sprintf("%s.%d", subnet, i+1)
		h.ns = append(h.ns, ns)
		h.names = append(h.names, fmt.Sprintf("host%d-%s", i, tag))
		h.addrs = append(h.addrs, addr)
		h.shm = append(h.shm, t.TempDir())
		steps = append(steps,
			[]string{"link", "add", dev, "netns", ns, "type", "veth", "peer", "name", port, "netns", sw},
			[]string{"-n", sw, "link", "set", port, "master", "br0"},
			[]string{"-n", sw, "link", "set", port, "up"},
			[]string{"-n", ns, "addr", "add", addr + "/24", "dev", dev},
			[]string{"-n", ns, "link", "set", dev, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Skipf("cannot join the namespaces with veth pairs and a bridge (%v)", err)
		}
	}
	return h
}

// job is the processes of one job on the hosts, perHost PEs on each, PE
// rank on host rank/perHost, started the way srun would: PE 0 serves the
// bootstrap store on its host's address.
type nsJob struct {
	cmds   []*exec.Cmd
	outs   []conformance.SyncBuffer
	stdins []io.WriteCloser // each PE's input, closed by Wait
}

// start starts program (with args) as every PE of a job, with env added to
// this process's environment; the job ends with ctx.
func (h *nsHosts) start(ctx context.Context, t *testing.T, perHost int, env []string, program string, args ...string) *nsJob {
	t.Helper()
	return h.startOn(ctx, t, blockHosts(len(h.ns), perHost), env, program, args...)
}

// blockHosts places perHost PEs on each of k hosts, PEs 0 to perHost-1 on
// the first, and so on.
func blockHosts(k, perHost int) []int {
	hosts := make([]int, k*perHost)
	for rank := range hosts {
		hosts[rank] = rank / perHost
	}
	return hosts
}

// startOn is start with PE rank on host hostOf[rank].
func (h *nsHosts) startOn(ctx context.Context, t *testing.T, hostOf []int, env []string, program string, args ...string) *nsJob {
	t.Helper()
	n := len(hostOf)
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	j := &nsJob{outs: make([]conformance.SyncBuffer, n)}
	for rank := range n {
		host := hostOf[rank]
		argv := append([]string{"netns", "exec", h.ns[host], "unshare", "--uts", "--",
			"sh", "-c", `hostname "$0" && exec "$@"`, h.names[host], program}, args...)
		cmd := exec.CommandContext(ctx, "ip", argv...)
		cmd.Env = append(os.Environ(),
			bootstrap.EnvSlurmRank+"="+fmt.Sprint(rank),
			bootstrap.EnvSlurmSize+"="+fmt.Sprint(n),
			bootstrap.EnvBootstrap+"="+h.addrs[0]+":29500",
			bootstrap.EnvSecret+"="+hex.EncodeToString(secret),
			core.EnvShmDir+"="+h.shm[host],
			"GORACE=atexit_sleep_ms=0")
		cmd.Env = append(cmd.Env, env...)
		cmd.Stdout, cmd.Stderr = &j.outs[rank], &j.outs[rank]
		cmd.WaitDelay = 5 * time.Second
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatalf("PE %d: %v", rank, err)
		}
		j.stdins = append(j.stdins, stdin)
		if err := cmd.Start(); err != nil {
			t.Fatalf("PE %d: %v", rank, err)
		}
		j.cmds = append(j.cmds, cmd)
	}
	return j
}

// wait waits for every PE and returns each one's error.
func (j *nsJob) wait() []error {
	errs := make([]error, len(j.cmds))
	var wg sync.WaitGroup
	for i, c := range j.cmds {
		wg.Go(func() { errs[i] = c.Wait() })
	}
	wg.Wait()
	return errs
}
