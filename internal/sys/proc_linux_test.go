//go:build linux

package sys

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProcessAlive(t *testing.T) {
	require.True(t, ProcessAlive(os.Getpid()))
	require.True(t, ProcessAlive(1), "init exists, even if it is not ours to signal")
	require.False(t, ProcessAlive(0))
	require.False(t, ProcessAlive(-1))

	// A child that died and was not reaped yet is a zombie: dead.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return !ProcessAlive(cmd.Process.Pid) }, time.Minute, time.Millisecond)
	require.NoError(t, cmd.Wait())
	require.False(t, ProcessAlive(cmd.Process.Pid), "a reaped child is gone")
}
