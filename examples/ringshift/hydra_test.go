package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hydra finds MPICH's mpiexec: Debian installs it as mpiexec.hydra and
// points plain mpiexec at Open MPI's when both are installed.
func hydra(t *testing.T) string {
	for _, name := range []string{"mpiexec.hydra", "mpiexec"} {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, _ := exec.CommandContext(ctx, path, "--version").CombinedOutput()
		cancel()
		if strings.Contains(string(out), "HYDRA") {
			return path
		}
	}
	t.Skip("MPICH's mpiexec (Hydra) is not installed (apt-get install mpich); the PMI-1 launch is not tested")
	return ""
}

// TestHydraLaunch runs ringshift under MPICH's mpiexec with no goshmem
// variable: rank, size, the store's address and the secret all come
// through Hydra's PMI-1.
func TestHydraLaunch(t *testing.T) {
	mpiexec := hydra(t)
	exe := filepath.Join(t.TempDir(), "ringshift")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GOSHMEM_") || strings.HasPrefix(k, "SHMEM_") || strings.HasPrefix(k, "PMI_") ||
			strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "OMPI_") || strings.HasPrefix(k, "PMIX_") {
			continue
		}
		env = append(env, kv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpiexec, "-n", "4", exe, "-rounds", "20")
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "ringshift: 4 PEs")
	require.Contains(t, string(out), "verified")
}
