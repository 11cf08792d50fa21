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

// protocolProgram is a C program of testdata that reads a provider's
// shared words through the library's own tables (fast.h, window.h)
// besides shmem.h, compiled once against the library setup built.
type protocolProgram struct {
	name     string // testdata/<name>.c
	provider string // GOSHMEM_PROVIDER its jobs run over
	once     sync.Once
	prog     string
	err      error
}

var (
	fastBuilt   = &protocolProgram{name: "fastpath", provider: "loopback"}
	windowBuilt = &protocolProgram{name: "window", provider: "ntbring"}
)

func (p *protocolProgram) build(t *testing.T) (dir, prog string) {
	t.Helper()
	dir = setup(t)
	p.once.Do(func() {
		p.prog = filepath.Join(dir, p.name)
		out, err := exec.Command("gcc", "-std=c11", "-O2", "-Wall", "-Werror=implicit-function-declaration",
			"-I", "../include", "-I", ".", "-o", p.prog, filepath.Join("testdata", p.name+".c"),
			"-L", dir, "-lgoshmem", "-Wl,-rpath,"+dir, "-lpthread").CombinedOutput()
		if err != nil {
			p.err = fmt.Errorf("gcc: %v\n%s", err, out)
		}
	})
	require.NoError(t, p.err)
	return dir, p.prog
}

// run runs the program on np PEs over its provider with env added, and
// returns its output once it exited 0; it fails the test on another
// status or after limit.
func (p *protocolProgram) run(t *testing.T, limit time.Duration, np int, env []string, args ...string) string {
	t.Helper()
	dir, prog := p.build(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "oshrun"), append([]string{"-np", fmt.Sprint(np), prog}, args...)...)
	cmd.Env = append(os.Environ(), "GOSHMEM_PROVIDER="+p.provider, "SHMEM_SYMMETRIC_SIZE=8M")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s %v on %d PEs (%v) did not finish:\n%s", p.name, args, np, env, out.String())
	require.NoError(t, err, "%s %v on %d PEs (%v):\n%s", p.name, args, np, env, out.String())
	return out.String()
}

// fastRun runs fastpath on np PEs over loopback: a lost wake-up makes a
// PE sleep its slices out, never hang; a broken barrier would, so a
// minute is the bound.
func fastRun(t *testing.T, np int, env []string, args ...string) string {
	t.Helper()
	return fastBuilt.run(t, time.Minute, np, env, args...)
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

// TestFastPathCollectives: each collective the fast path runs, by C and
// by Go in one job (one PE's data through Go, FASTPATH_GO_PE), with more
// PEs than CPUs (a C member's wait leaves the call to Go), and in both
// fence modes; every member checks what it got.
//
//   - bcast: active-set broadcasts by push, every root, on every PE and
//     on a strided set; pSync checked too.
//   - tbcast: team broadcasts by push on the World's team and a team of
//     the even PEs, roots rounds ahead of members, and alltoalls (Go's
//     direct gathers, which count on the same words) between.
//   - gathers: the World's fcollect and alltoall, team and active-set
//     forms, staged and past the banks, Go's reductions on the same banks
//     between, and a member lingering over its dest.
func TestFastPathCollectives(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		test, rounds string
		goPE         int
	}{
		{"bcast", "40", 2},
		{"tbcast", "40", 3},
		{"gathers", "12", 4},
	} {
		envs := [][]string{nil, {"FASTPATH_GO_PE=0"}, {fmt.Sprintf("FASTPATH_GO_PE=%d", tc.goPE)}, {"GOSHMEM_CPUS=1"},
			{"GOSHMEM_LOOPBACK_FENCE=atomic"}}
		for _, env := range envs {
			t.Run(strings.Join(append([]string{tc.test}, env...), ","), func(t *testing.T) {
				t.Parallel()
				out := fastRun(t, 5, env, tc.test, tc.rounds)
				require.Contains(t, out, tc.test+": "+tc.rounds+" rounds")
			})
		}
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
