//go:build linux

package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAlive(t *testing.T) {
	require.True(t, Alive(os.Getpid()))
	require.True(t, Alive(1), "init exists, even if it is not ours to signal")
	require.False(t, Alive(0))
	require.False(t, Alive(-1))

	// A child that died and was not reaped yet is a zombie: dead.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return !Alive(cmd.Process.Pid) }, time.Minute, time.Millisecond)
	require.NoError(t, cmd.Wait())
	require.False(t, Alive(cmd.Process.Pid), "a reaped child is gone")
}

// A process stopped by a signal is Stopped until it is continued.
func TestStopped(t *testing.T) {
	require.False(t, Stopped(os.Getpid()))
	require.False(t, Stopped(0))
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	require.False(t, Stopped(pid))
	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
	require.Eventually(t, func() bool { return Stopped(pid) }, time.Minute, time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
	require.Eventually(t, func() bool { return !Stopped(pid) }, time.Minute, time.Millisecond)
}
