package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A C program runs over a plugin provider named at run time, found on
// GOSHMEM_PROVIDER_PATH: the library links the plugin host.
func TestPluginProvider(t *testing.T) {
	dir := setup(t)
	plugins := t.TempDir()
	exe := filepath.Join(plugins, "goshmem-provider-loopback-plugin")
	out, err := exec.Command("go", "build", "-o", exe, "../cmd/goshmem-provider-loopback-plugin").CombinedOutput()
	require.NoError(t, err, "%s", out)
	manifest, err := exec.Command(exe, "-manifest").Output()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe+".json", manifest, 0o644))
	t.Setenv("GOSHMEM_PROVIDER_PATH", plugins)
	const np = 2
	got, code := oshrun(t, dir, "loopback-plugin", np, "rma")
	require.Equal(t, 0, code, "exit status; output:\n%s", got)
	for pe := range np {
		require.Contains(t, got, fmt.Sprintf("rma ok %d", pe))
	}
}
