package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
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

// provinfo -e lists every variable of the registry once, with its kind
// and owner, and so does -e -json.
func TestEnvListsEveryVariable(t *testing.T) {
	settings := core.Settings()
	require.Greater(t, len(settings), 40, "the registry as provinfo links it")
	code, out, _ := runArgs("-e")
	require.Equal(t, 0, code)
	lines := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]]++
		}
	}
	for _, p := range settings {
		require.Equal(t, 1, lines[p.Env], "%s listed once", p.Env)
		require.Regexp(t, `(?m)^`+p.Env+`\s+`+p.Kind.String()+`\s.*\s`+regexp.QuoteMeta(p.Owner)+`\s`, out, "%s with its kind and owner", p.Env)
	}
	for _, name := range []string{"GOSHMEM_C_DEFER", "GOSHMEM_C_WINDOW", "GOSHMEM_C_EXTRA_PROCS", "GOSHMEM_C_FAST_PATH",
		"GOSHMEM_CPUS", "GOSHMEM_EMULATED_HOST", "GOSHMEM_RSH", "SHMEM_DEBUG", "GOSHMEM_SECRET"} {
		_, ok := core.Setting(name)
		require.True(t, ok, "%s is declared in provinfo's registry", name)
	}
	code, out, _ = runArgs("-e", "-json")
	require.Equal(t, 0, code)
	var vars []paramView
	require.NoError(t, json.Unmarshal([]byte(out), &vars))
	byName := map[string]paramView{}
	for _, v := range vars {
		byName[v.Env] = v
	}
	for _, p := range settings {
		v, ok := byName[p.Env]
		require.True(t, ok, p.Env)
		require.Equal(t, p.Kind.String(), v.Kind, p.Env)
		require.Equal(t, p.Owner, v.Owner, p.Env)
		require.Equal(t, p.Secret, v.Secret, p.Env)
		require.NotEmpty(t, v.Help, p.Env)
	}
	require.True(t, byName["GOSHMEM_SECRET"].Secret)
}

var update = flag.Bool("update", false, "rewrite README.md's table of variables")

// README.md's table of variables is what provinfo -e -markdown prints:
// go test ./cmd/provinfo -run TestREADMEVariables -update rewrites it.
func TestREADMEVariables(t *testing.T) {
	const begin, end = "<!-- variables: begin (generated) -->\n", "<!-- variables: end -->\n"
	path := filepath.Join("..", "..", "README.md")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	readme := string(b)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	require.True(t, i >= 0 && j > i, "README.md marks its table with %q and %q", begin, end)
	code, want, _ := runArgs("-e", "-markdown")
	require.Equal(t, 0, code)
	if got := readme[i+len(begin) : j]; got != want {
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(readme[:i+len(begin)]+want+readme[j:]), 0o644))
			return
		}
		t.Fatalf("README.md's table of variables is not the registry's: run go test ./cmd/provinfo -run TestREADMEVariables -update\n%s",
			firstDiff(got, want))
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(g) || k < len(w); k++ {
		var gl, wl string
		if k < len(g) {
			gl = g[k]
		}
		if k < len(w) {
			wl = w[k]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n README:   %s\n registry: %s", k+1, gl, wl)
		}
	}
	return ""
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
