package hybrid_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// The whole conformance suite over tcp+loopback with every PE a process
// on a host of its own as far as the job can tell (see nsHosts), on 2
// hosts x 2 PEs and 3 hosts x 2 PEs. Like the other suites of PE
// processes, make test runs it without the race detector (which sees one
// process's goroutines, not what passes between processes). Skipped in
// -short.
func TestConformanceNamespacedHostsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	p, err := core.Lookup("tcp")
	if err != nil {
		t.Fatal(err)
	}
	info := core.RegisteredComposer().Compose(p).Info()
	for _, hosts := range []int{2, 3} {
		t.Run(fmt.Sprintf("%dx2", hosts), func(t *testing.T) {
			h := newNSHosts(t, hosts)
			n := 2 * hosts
			for _, c := range conformance.Cases() {
				t.Run(c.Name, func(t *testing.T) {
					if missing := c.Needs &^ info.Caps; missing != 0 {
						t.Skipf("%s lacks %s", info.Name, missing)
					}
					if n < c.MinPEs || (c.MaxPEs != 0 && n > c.MaxPEs) {
						t.Skipf("the case runs on %d to %d PEs", c.MinPEs, c.MaxPEs)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					j := h.start(ctx, t, 2, []string{
						"GOSHMEM_CONFORMANCE_CASE=" + c.Name,
						core.EnvProvider + "=tcp",
						shmem.EnvSymmetricSize + "=8M",
					}, os.Args[0], "-test.run=^$")
					errs := j.wait()
					for pe, err := range errs {
						out := j.outs[pe].String()
						if err != nil || !strings.Contains(out, "conformance: ran PE") {
							t.Errorf("PE %d (host %d): %v\n%s", pe, pe/2, err, out)
						}
					}
				})
			}
		})
	}
}
