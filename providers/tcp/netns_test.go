package tcp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// netnsPair is two network namespaces joined by a veth pair: two hosts
// as far as the network goes, each with its own interfaces, addresses
// and loopback.
type netnsPair struct {
	ns   [2]string
	dev  [2]string
	addr [2]string
}

// newNetnsPair sets the pair up, or skips the test saying why it cannot;
// the namespaces (and with them the veth pair) are deleted when the test
// ends, whatever happened.
func newNetnsPair(t *testing.T) *netnsPair {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("two network namespaces need root (ip netns add); run as root to test the tcp provider across them")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the ip command (iproute2) is not installed; .ci/run installs it")
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	subnet := fmt.Sprintf("10.%d.%d", 100+int(b[0])%100, b[1])
	p := &netnsPair{
		ns:   [2]string{"gshmem-" + tag + "-a", "gshmem-" + tag + "-b"},
		dev:  [2]string{"gs" + tag + "a", "gs" + tag + "b"},
		addr: [2]string{subnet + ".1", subnet + ".2"},
	}
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	for i, ns := range p.ns {
		if err := ip("netns", "add", ns); err != nil {
			if i == 0 {
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
	steps := [][]string{
		{"link", "add", p.dev[0], "netns", p.ns[0], "type", "veth", "peer", "name", p.dev[1], "netns", p.ns[1]},
	}
	for i := range 2 {
		steps = append(steps,
			[]string{"-n", p.ns[i], "addr", "add", p.addr[i] + "/24", "dev", p.dev[i]},
			[]string{"-n", p.ns[i], "link", "set", p.dev[i], "up"},
			[]string{"-n", p.ns[i], "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Skipf("cannot join the namespaces with a veth pair (%v)", err)
		}
	}
	return p
}

// run starts this test binary as PE rank of a 2-PE job in namespace rank,
// the way srun would: PE 0 serves the bootstrap store on its veth
// address, which PE 1 reaches across the pair.
func (p *netnsPair) run(ctx context.Context, rank int, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", p.ns[rank], os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		bootstrap.EnvSlurmRank+"="+fmt.Sprint(rank),
		bootstrap.EnvSlurmSize+"=2",
		bootstrap.EnvBootstrap+"="+p.addr[0]+":29500",
		core.EnvProvider+"=tcp",
		"GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// One job across two namespaces: conformance cases run with PE 0 in one
// and PE 1 in the other, over the veth pair's real interfaces and
// addresses, with a job secret. PE 1 listens where GOSHMEM_TCP_IFACE
// says; PE 0 on every interface, advertising them all.
func TestTwoNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	p := newNetnsPair(t)
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	for _, name := range []string{"PutGet/Sizes", "Atomic/FetchAddContention", "Wait/PingPong", "Barrier/ManyRounds", "Core/RoundTrip"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			env := []string{
				"GOSHMEM_CONFORMANCE_CASE=" + name,
				bootstrap.EnvSecret + "=" + hex.EncodeToString(secret),
				core.EnvShmDir + "=" + t.TempDir(),
				shmem.EnvSymmetricSize + "=8M",
			}
			outs := make([]bytes.Buffer, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for rank := range 2 {
				extra := env
				if rank == 1 {
					extra = append(extra, "GOSHMEM_TCP_IFACE="+p.dev[1])
				}
				cmd := p.run(ctx, rank, extra)
				cmd.Stdout, cmd.Stderr = &outs[rank], &outs[rank]
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[rank] = cmd.Run()
				}()
			}
			wg.Wait()
			for rank := range 2 {
				marker := fmt.Sprintf("conformance: ran PE %d %s\n", rank, name)
				if errs[rank] != nil || !strings.Contains(outs[rank].String(), marker) {
					t.Errorf("PE %d in namespace %s: %v\n%s", rank, p.ns[rank], errs[rank], outs[rank].String())
				}
			}
		})
	}
}
