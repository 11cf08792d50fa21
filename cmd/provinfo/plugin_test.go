package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// envAsMain makes the test binary run provinfo's main: plugins register
// at init from the environment, so a test of them needs a fresh process.
const envAsMain = "PROVINFO_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// provinfo runs provinfo in a process of its own with GOSHMEM_PROVIDER_PATH
// set to dir.
func provinfo(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envAsMain+"=1", core.EnvProviderPath+"="+dir)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, string(out)
}

// TestListsPlugins builds the example plugin and checks that provinfo
// lists it beside the built-ins, marked as a plugin with its path and
// protocol, unknown until its self-test passed and wrote its manifest,
// then with what it offers.
func TestListsPlugins(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "goshmem-provider-loopback-plugin")
	out, err := exec.Command("go", "build", "-o", exe, "../goshmem-provider-loopback-plugin").CombinedOutput()
	require.NoError(t, err, string(out))

	// Without a manifest the plugin is listed, and not started, as unknown.
	code, text := provinfo(t, dir)
	require.Equal(t, 0, code, text)
	require.Regexp(t, `(?m)^loopback\s+one-host\s+.*built-in`, text)
	require.Regexp(t, `(?m)^loopback-plugin\s+any-host\s+\S+\s+plugin\s+unknown until started: no manifest`, text)

	// The self-test starts it, and writes the manifest.
	code, text = provinfo(t, dir, "-check", "loopback-plugin")
	require.Equal(t, 0, code, text)
	require.Contains(t, text, "PASS", text)
	require.Contains(t, text, "manifest written: "+exe+".json")

	code, text = provinfo(t, dir)
	require.Equal(t, 0, code, text)
	require.Regexp(t, `(?m)^loopback-plugin\s+one-host\s+rma,atomic\S*\s+plugin\s`, text)

	code, text = provinfo(t, dir, "-json")
	require.Equal(t, 0, code, text)
	var views []infoView
	require.NoError(t, json.Unmarshal([]byte(text), &views))
	var pv *infoView
	for i := range views {
		if views[i].Name == "loopback-plugin" {
			pv = &views[i]
		}
	}
	require.NotNil(t, pv, text)
	require.Equal(t, "plugin "+exe+", protocol 1", pv.Origin)
	require.NotContains(t, pv.Caps, "direct-access")

	code, text = provinfo(t, dir, "-e")
	require.Equal(t, 0, code, text)
	require.Contains(t, text, "GOSHMEM_LOOPBACK_PLUGIN_TIMEOUT")
}
