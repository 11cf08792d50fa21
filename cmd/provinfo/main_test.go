package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func runArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestListsLoopback(t *testing.T) {
	code, out, _ := runArgs()
	require.Equal(t, 0, code)
	require.Contains(t, out, "PROVIDER")
	require.Regexp(t, `(?m)^loopback\s+one-host\s+rma,atomic`, out)
}

func TestVerboseOneProvider(t *testing.T) {
	code, out, _ := runArgs("-p", "loopback", "-v")
	require.Equal(t, 0, code)
	for _, want := range []string{"provider: loopback", "locality:", "thread safe:", "atomics int64:", "GOSHMEM_LOOPBACK_SPIN", "inject size:"} {
		require.Contains(t, out, want)
	}
}

func TestEnvListsEveryVariable(t *testing.T) {
	code, out, _ := runArgs("-e")
	require.Equal(t, 0, code)
	for _, want := range []string{"SHMEM_SYMMETRIC_SIZE", "SHMEM_INFO", "SHMEM_DEBUG", "GOSHMEM_PROVIDER", "GOSHMEM_BOOTSTRAP", "GOSHMEM_LOOPBACK_SPIN"} {
		require.Contains(t, out, want)
	}
}

func TestJSON(t *testing.T) {
	code, out, _ := runArgs("-json")
	require.Equal(t, 0, code)
	var views []infoView
	require.NoError(t, json.Unmarshal([]byte(out), &views))
	var lb *infoView
	for i := range views {
		if views[i].Name == "loopback" {
			lb = &views[i]
		}
	}
	require.NotNil(t, lb)
	require.Contains(t, lb.Caps, "direct-access")
	require.Equal(t, "one-host", lb.Locality)
	require.Contains(t, lb.Atomics["int64"], "cswap")

	code, out, _ = runArgs("-e", "-json")
	require.Equal(t, 0, code)
	var vars []paramView
	require.NoError(t, json.Unmarshal([]byte(out), &vars))
	require.NotEmpty(t, vars)
}

func TestExitCodes(t *testing.T) {
	code, _, errOut := runArgs("-p", "bogus")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `unknown provider "bogus"`)
	require.Contains(t, errOut, "loopback")
	code, _, _ = runArgs("-nosuchflag")
	require.Equal(t, 2, code)
	code, _, _ = runArgs("extra")
	require.Equal(t, 2, code)
}

func TestCheckLoopback(t *testing.T) {
	code, out, errOut := runArgs("-check", "loopback")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"open", "put 8B + quiet", "get 8B", "fetch-add 8B", "close", "PASS"} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `(?m)^get 8B\s+ok\s+[0-9.]+µs/op`, out)
}

func TestCheckUsage(t *testing.T) {
	code, _, errOut := runArgs("-check", "bogus")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `unknown provider "bogus"`)
	code, _, _ = runArgs("-check", "loopback", "-json")
	require.Equal(t, 2, code)
	code, _, errOut = runArgs("-h")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "Exit status: 0 success; 1 failure")
}

// TestSaysWhetherPMIxLoads: the listing ends saying whether the PMIx
// library loads here; where it cannot (here: GOSHMEM_PMIX_LIB names one
// that is not installed, in a child, since a process loads it once),
// it says why and which package provides it.
func TestSaysWhetherPMIxLoads(t *testing.T) {
	code, out, _ := runArgs()
	require.Equal(t, 0, code)
	require.Contains(t, out, "Launchers: oshrun;")
	require.Regexp(t, `(?m)^PMIx: (available|not available): `, out)
	if os.Getenv("PROVINFO_PMIX_CHILD") != "" {
		require.Contains(t, out, "PMIx: not available: ")
		require.Contains(t, out, "libpmix-absent-for-this-test.so.2")
		require.Contains(t, out, "libpmix2")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSaysWhetherPMIxLoads$", "-test.v")
	cmd.Env = append(os.Environ(), "PROVINFO_PMIX_CHILD=1", "GOSHMEM_PMIX_LIB=libpmix-absent-for-this-test.so.2")
	child, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", child)
	require.Contains(t, string(child), "--- PASS: TestSaysWhetherPMIxLoads")
}
