package launcher

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A PE stopped by a signal for StoppedAfter is lost in the store, and the
// job ends blaming it, though its process lives on; with StoppedAfter
// negative it is left stopped until the job is otherwise ended.
func TestStoppedPEIsLost(t *testing.T) {
	stop := func(o *Options) {
		started := o.Started
		o.Started = func(pe, pid int) {
			started(pe, pid)
			if pe == 1 {
				syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
	}
	r := launch(t, context.Background(), 3, "hang", nil, stop, func(o *Options) { o.StoppedAfter = 500 * time.Millisecond })
	require.NoError(t, r.err)
	require.Equal(t, ExitLost, r.code)
	require.Regexp(t, `oshrun: PE 1 \(pid \d+\) was lost by the bootstrap store \(its process \(pid \d+\) has been stopped by a signal for .+\) but is still running`, r.stderr)
	require.Less(t, r.took, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r = launch(t, ctx, 2, "hang", nil, stop, func(o *Options) { o.StoppedAfter = -1 })
	require.Equal(t, ExitInterrupted, r.code, "%v", r.err)
	require.NotContains(t, r.stderr, fmt.Sprintf("PE 1 (pid %d) was lost", r.pids[1]))
}

// A PE on another host is watched by its host's agent, which tells the
// launcher when its process is stopped: it is lost as a local one is,
// named with its host.
func TestStoppedRemotePEIsLost(t *testing.T) {
	fakeRsh(t)
	stop := func(o *Options) {
		started := o.Started
		o.Started = func(pe, pid int) {
			started(pe, pid)
			if pe == 2 {
				syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
	}
	r := launch(t, context.Background(), 3, "hang", nil, onHosts("localhost:1,nodea:2"), stop,
		func(o *Options) { o.StoppedAfter = 500 * time.Millisecond })
	require.NoError(t, r.err)
	require.Equal(t, ExitLost, r.code, r.stderr)
	require.Regexp(t, `PE 2 \(pid \d+ on nodea\) was lost by the bootstrap store \(its process \(pid \d+ on nodea\) has been stopped by a signal for .+\)`, r.stderr)
	require.Less(t, r.took, 20*time.Second)
	for _, pid := range r.pids {
		require.True(t, gone(pid), "PE pid %d outlived the job", pid)
	}
}
