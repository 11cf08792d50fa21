package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/proc"
)

// TestListingIsBounded puts executables that never answer on the search
// path: one whose child holds its stdout open, one that execs sleep.
// provinfo lists every provider without starting either; its self-test
// of each fails within the bound set by GOSHMEM_PLUGIN_START_TIMEOUT and
// leaves none of their processes behind; -e names the variable.
func TestListingIsBounded(t *testing.T) {
	dir := t.TempDir()
	for name, script := range map[string]string{
		"sleepy":    "sleep 1000 &\necho $! >>'" + dir + "/pids'\nwait\n",
		"execsleep": "echo $$ >>'" + dir + "/pids'\nexec sleep 1000\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "goshmem-provider-"+name), []byte("#!/bin/sh\n"+script), 0o755))
	}
	pids := func() []int {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		var out []int
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	t.Cleanup(func() {
		for _, pid := range pids() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), envAsMain+"=1", core.EnvProviderPath+"="+dir, "GOSHMEM_PLUGIN_START_TIMEOUT=1s")
	cmd.WaitDelay = time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	t.Logf("provinfo took %v:\n%s", took, out)
	require.NoError(t, ctx.Err(), "provinfo still ran after 20s")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^loopback\s`, string(out))
	for _, name := range []string{"sleepy", "execsleep"} {
		require.Regexp(t, `(?m)^`+name+`\s.*unknown until started: no manifest`, string(out))
	}
	require.Empty(t, pids(), "listing started a plugin")

	// Named for a self-test, each is started, and fails within the bound.
	for _, name := range []string{"sleepy", "execsleep"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-check", name)
		cmd.Env = append(os.Environ(), envAsMain+"=1", core.EnvProviderPath+"="+dir, "GOSHMEM_PLUGIN_START_TIMEOUT=1s")
		cmd.WaitDelay = time.Second
		out, err := cmd.CombinedOutput()
		late := ctx.Err()
		cancel()
		t.Logf("provinfo -check %s: %v\n%s", name, err, out)
		require.NoError(t, late, "provinfo -check %s still ran after 20s", name)
		require.Error(t, err)
		require.Contains(t, string(out), "no handshake within 1s (GOSHMEM_PLUGIN_START_TIMEOUT)")
	}
	require.NotEmpty(t, pids(), "the self-tests started them")
	for _, pid := range pids() {
		require.Eventually(t, func() bool { return !proc.Alive(pid) }, 5*time.Second, 10*time.Millisecond,
			"process %d of a plugin outlived provinfo", pid)
	}

	code, text := provinfo(t, dir, "-e")
	require.Equal(t, 0, code, text)
	require.Regexp(t, `(?m)^GOSHMEM_PLUGIN_START_TIMEOUT\s+duration\s+5s\s`, text)
}
