package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// The window path against the Go side of ntbring's direct puts, in jobs
// of separate processes: testdata/window.c looks at the link's words
// through the library's table (window.h).

// windowRun runs window on np PEs over ntbring with env added (two
// minutes at most).
func windowRun(t *testing.T, np int, env []string, args ...string) string {
	t.Helper()
	return windowBuilt.run(t, 2*time.Minute, np, env, args...)
}

// TestWindowPathIsOn: over ntbring each PE reaches its neighbours through
// the window path, not a PE two hops away; GOSHMEM_C_WINDOW=0 turns it
// off; over loopback the fast path has the job and this path stays off.
func TestWindowPathIsOn(t *testing.T) {
	t.Parallel()
	out := windowRun(t, 2, nil, "show")
	require.Contains(t, out, "PE 0: window path on, max 4096, reaches 1\n", out)
	require.Contains(t, out, "PE 1: window path on, max 4096, reaches 0\n", out)

	out = windowRun(t, 4, nil, "show")
	require.Contains(t, out, "PE 0: window path on, max 4096, reaches 1 3\n", out)
	require.Contains(t, out, "PE 2: window path on, max 4096, reaches 1 3\n", out)

	out = windowRun(t, 2, []string{"GOSHMEM_C_WINDOW=0"}, "show")
	require.Equal(t, 2, strings.Count(out, "window path off"), out)
	// Every boolean's form, in C's settings as in Go's.
	out = windowRun(t, 2, []string{"GOSHMEM_C_WINDOW=Off"}, "show")
	require.Equal(t, 2, strings.Count(out, "window path off"), out)

	out = windowRun(t, 2, []string{"GOSHMEM_PROVIDER=loopback"}, "show")
	require.Equal(t, 2, strings.Count(out, "window path off"), out)
}

// TestWindowPathBadSwitch: a switch that is no boolean's form ends the job
// saying what is allowed.
func TestWindowPathBadSwitch(t *testing.T) {
	t.Parallel()
	dir, prog := windowBuilt.build(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "oshrun"), "-np", "2", prog, "show")
	cmd.Env = append(os.Environ(), "GOSHMEM_PROVIDER=ntbring", "GOSHMEM_C_WINDOW=maybe")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), `GOSHMEM_C_WINDOW="maybe" is malformed: allowed `+core.BoolForms)
}

// TestWindowPathStream: C's small puts by stores and Go's 8 KiB puts by
// DMA over the same link, from one thread and from two, land whole; the
// target, asleep in wait_until, is woken by the notices; C called into Go
// for fewer notices than it put values (they are coalesced). With the
// path off, the same program passes through Go.
func TestWindowPathStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		env  []string
	}{
		{"stream", nil},
		{"threads", nil},
		{"stream", []string{"GOSHMEM_C_WINDOW=0"}},
		{"stream", []string{"GOSHMEM_C_DEFER=0"}},
	} {
		t.Run(strings.Join(append([]string{tc.mode}, tc.env...), ","), func(t *testing.T) {
			t.Parallel()
			out := windowRun(t, 2, tc.env, tc.mode, "20000")
			require.Contains(t, out, tc.mode+": 3 rounds of 20480", out)
		})
	}
}

// TestWindowPathCut: the link PE 0 stores through is cut while it puts
// (3 hosts: the put then goes round the other way); every round lands
// whole, before, during and after the cut.
func TestWindowPathCut(t *testing.T) {
	t.Parallel()
	out := windowRun(t, 3, []string{"GOSHMEM_NTB_FAULT=link=0:down@1500ms"}, "cut", "4096")
	require.Contains(t, out, "link cut seen", out)
}

// TestWindowPathPrograms: the RMA, deferral-queue, threads and wait
// programs over ntbring, where their small puts to neighbours take the
// window path (at 4 PEs, one PE of each is two hops away: Go).
func TestWindowPathPrograms(t *testing.T) {
	dir := setup(t)
	for _, np := range []int{2, 4} {
		for _, prog := range []string{"rma", "defer", "threads", "wait"} {
			t.Run(fmt.Sprintf("%d/%s", np, prog), func(t *testing.T) {
				t.Parallel()
				out, code := oshrun(t, dir, "ntbring", np, prog)
				require.Equal(t, 0, code, "exit status; output:\n%s", out)
				for pe := range np {
					require.Contains(t, out, fmt.Sprintf("%s ok %d", prog, pe))
				}
			})
		}
	}
}
