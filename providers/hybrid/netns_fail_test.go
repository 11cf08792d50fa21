package hybrid_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/goshmem/goshmem/conformance"
)

// A PE killed on one of three namespaced hosts (2 PEs each, processes that
// tell their hosts apart by hostname, tcp between the hosts over veth
// pairs): every other PE, the one on its host included, errors within the
// bound instead of waiting for it.
func TestPEKilledNamespacedHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	h := newNSHosts(t, 3)
	k := conformance.KilledPE{
		Provider: "tcp", NPEs: 6, Victim: 5,
		Env:       map[string]string{"GOSHMEM_TCP_TIMEOUT": "5s"},
		Composite: "tcp+loopback",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j := h.start(ctx, t, 2, k.ChildEnv(), os.Args[0], "-test.run=^$")
	k.KillAndCheck(t, j.cmds, j.outs, j.stdins)
}
