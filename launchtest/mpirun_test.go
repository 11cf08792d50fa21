package launchtest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// openMPI finds Open MPI's mpirun, or skips.
func openMPI(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"mpirun.openmpi", "mpirun"} {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, _ := exec.CommandContext(ctx, path, "--version").CombinedOutput()
		cancel()
		if strings.Contains(string(out), "Open MPI") || strings.Contains(string(out), "OpenRTE") {
			return path
		}
	}
	t.Skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin): the PMIx launch under mpirun is not tested")
	return ""
}

func mpirunArgs(mpirun string, np int, prog ...string) []string {
	return append([]string{mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np)}, prog...)
}

func TestMpirun(t *testing.T) {
	mpirun := openMPI(t)
	needPMIx(t)
	ringshift, cring := programs(t)
	env := cleanEnv()
	const iface = "Open MPI's mpirun through PMIx"
	verified(t, env, iface, "ringshift: 4 PEs, 200 rounds of 8192 bytes over loopback: verified",
		mpirunArgs(mpirun, 4, ringshift, "-rounds", "200")...)
	verified(t, env, iface, "cring: 4 PEs, 100 rounds: verified", mpirunArgs(mpirun, 4, cring, "100")...)
	globalExit(t, env, mpirunArgs(mpirun, 4, cring, "1", "7")...)
	for _, exe := range []string{ringshift, cring} {
		args := []string{ringshift, "-rounds", "1000000000"}
		if exe == cring {
			args = []string{cring, "1000000000"}
		}
		out, code := killOne(t, env, 4, 2, "OMPI_COMM_WORLD_RANK", exe, mpirunArgs(mpirun, 4, args...)...)
		require.NotZero(t, code, "%s", out)
		// The others name it, unless mpirun, which saw it die, ended
		// them first and names it itself.
		require.Regexp(t, `PE 2 lost|process rank 2 with PID \d+ on node \S+ exited on signal 9`, out)
	}
}
