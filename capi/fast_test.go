package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The fast path against the Go side of the loopback protocol, in jobs of
// separate processes: testdata/fastpath.c looks at the protocol's words
// through the library's table (fast.h) to know when a PE sleeps and
// whether a write woke it.

var fastBuilt struct {
	once sync.Once
	prog string
	err  error
}

// fastProgram compiles testdata/fastpath.c against the library setup
// built; it needs fast.h besides shmem.h.
func fastProgram(t *testing.T) (dir, prog string) {
	t.Helper()
	dir = setup(t)
	fastBuilt.once.Do(func() {
		fastBuilt.prog = filepath.Join(dir, "fastpath")
		out, err := exec.Command("gcc", "-std=c11", "-O2", "-Wall", "-Werror=implicit-function-declaration",
			"-I", "../include", "-I", ".", "-o", fastBuilt.prog, filepath.Join("testdata", "fastpath.c"),
			"-L", dir, "-lgoshmem", "-Wl,-rpath,"+dir).CombinedOutput()
		if err != nil {
			fastBuilt.err = fmt.Errorf("gcc: %v\n%s", err, out)
		}
	})
	require.NoError(t, fastBuilt.err)
	return dir, fastBuilt.prog
}

// fastRun runs fastpath on np PEs over loopback with env added, and
// returns its output once it exited 0; it fails the test on another
// status or after a minute (a lost wake-up makes a PE sleep its slices
// out, never hang; a broken barrier would).
func fastRun(t *testing.T, np int, env []string, args ...string) string {
	t.Helper()
	dir, prog := fastProgram(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "oshrun"), append([]string{"-np", fmt.Sprint(np), prog}, args...)...)
	cmd.Env = append(os.Environ(), "GOSHMEM_PROVIDER=loopback", "SHMEM_SYMMETRIC_SIZE=8M")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "fastpath %v on %d PEs (%v) did not finish:\n%s", args, np, env, out.String())
	require.NoError(t, err, "fastpath %v on %d PEs (%v):\n%s", args, np, env, out.String())
	return out.String()
}

// TestFastPathIsOn: on loopback every PE fills the table, in both fence
// modes and both barriers; GOSHMEM_C_FAST_PATH=0 sends one PE's data
// through Go and keeps its barrier the fast path's.
func TestFastPathIsOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		np   int
		env  []string
		want []string
	}{
		{2, nil, []string{"fast path on, data mapped"}},
		{2, []string{"GOSHMEM_LOOPBACK_FENCE=atomic"}, []string{"writers fence"}},
		{3, []string{"GOSHMEM_CPUS=1"}, []string{"barrier counter"}},
		{3, []string{"GOSHMEM_CPUS=4"}, []string{"barrier dissemination"}},
		{2, []string{"FASTPATH_GO_PE=1"}, []string{"PE 0: fast path on, data mapped", "PE 1: fast path on, data through Go"}},
	} {
		t.Run(strings.Join(append([]string{fmt.Sprint(tc.np)}, tc.env...), ","), func(t *testing.T) {
			t.Parallel()
			out := fastRun(t, tc.np, tc.env, "show")
			require.Equal(t, tc.np, strings.Count(out, "fast path on"), out)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
		})
	}
}

// TestFastPathWakesGoWaiter: a PE asleep in the futex (its wait handed
// from C to Go, armed for the variable's range) is woken by a C write to
// the variable and not by one elsewhere, on the heap and in static data;
// and, with one PE's data through Go, a Go writer wakes it as well.
func TestFastPathWakesGoWaiter(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{
		nil,
		{"GOSHMEM_LOOPBACK_FENCE=atomic"},
		{"FASTPATH_GO_PE=1"}, // Go writes, C's waiter hands over to Go
		{"FASTPATH_GO_PE=0"}, // C writes, the waiter is Go's from the start
	} {
		t.Run(strings.Join(append([]string{"env"}, env...), ","), func(t *testing.T) {
			t.Parallel()
			out := fastRun(t, 2, env, "wake", "20")
			require.Contains(t, out, "wake: 20 rounds")
		})
	}
}

// TestFastPathPingPong: round trips of p and wait_until, C to C and C to
// Go, and a bulk put spanning the awaited variable.
func TestFastPathPingPong(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{nil, {"FASTPATH_GO_PE=1"}, {"GOSHMEM_CPUS=1"}} {
		t.Run(strings.Join(append([]string{"env"}, env...), ","), func(t *testing.T) {
			t.Parallel()
			out := fastRun(t, 2, env, "pingpong", "2000")
			require.Contains(t, out, "pingpong: 2000 rounds")
		})
	}
}

// TestFastPathBarrier: the C barrier and Go's, in turn, count the same
// barriers (the dissemination barrier's count is in the control file),
// and each is a barrier: nobody leaves before everybody counted.
func TestFastPathBarrier(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		np  int
		env []string
	}{
		{2, nil},
		{4, []string{"GOSHMEM_CPUS=1"}}, // counter
		{5, []string{"GOSHMEM_CPUS=8"}}, // dissemination, 3 rounds
	} {
		t.Run(fmt.Sprint(tc.np), func(t *testing.T) {
			t.Parallel()
			out := fastRun(t, tc.np, tc.env, "barrier", "300")
			require.Contains(t, out, "barrier: 300 rounds")
		})
	}
}
