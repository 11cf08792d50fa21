package hybrid_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
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
	const n = 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j := h.start(ctx, t, 2, []string{
		envScenario + "=lost-on-real-hosts",
		core.EnvProvider + "=tcp",
		"GOSHMEM_TCP_TIMEOUT=5s",
	}, os.Args[0], "-test.run=^$")
	victim := j.cmds[n-1]
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	require.Eventually(t, func() bool { return strings.Contains(j.outs[n-1].String(), "ready") },
		time.Minute, 10*time.Millisecond, "the last PE never got ready:\n%s", &j.outs[n-1])
	require.Contains(t, j.outs[0].String(), "provider tcp+loopback")

	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	require.Eventually(t, func() bool {
		for rank := range n - 1 {
			if !strings.Contains(j.outs[rank].String(), "error: ") {
				return false
			}
		}
		return true
	}, time.Minute, time.Millisecond, "every PE errors")
	elapsed := time.Since(killed)
	for rank := range n - 1 {
		require.NoError(t, j.stdins[rank].Close())
		err := j.cmds[rank].Wait()
		require.NoError(t, err, "PE %d:\n%s", rank, &j.outs[rank])
		require.Contains(t, j.outs[rank].String(), fmt.Sprintf("PE %d", n-1), "PE %d names the lost PE", rank)
		t.Logf("PE %d: %s", rank, strings.TrimSpace(j.outs[rank].String()))
	}
	require.Less(t, elapsed, 30*time.Second, "the PEs took too long to notice")
	t.Logf("every PE failed %v after the kill", elapsed.Round(time.Millisecond))
}
