//go:build linux

package sys

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProcessAlive(t *testing.T) {
	require.True(t, ProcessAlive(os.Getpid()))
	require.True(t, ProcessAlive(1), "init exists, even if it is not ours to signal")
	require.False(t, ProcessAlive(0))
	require.False(t, ProcessAlive(-1))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, cmd.Run())
	require.False(t, ProcessAlive(cmd.Process.Pid), "a reaped child is gone")
}
