package plugin_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/plugin"
)

// envPluginDir carries the directory of the test's plugin executables to
// the test binary's children (the PEs of process runs), which must not
// build them again.
const envPluginDir = "GOSHMEM_PLUGIN_TEST_DIR"

// The plugins the tests use: the example, and the misbehaving one in its
// modes (see testdata/badplugin).
const (
	examplePlugin = "loopback-plugin"
	tcpPlugin     = "tcp-plugin"
	badPlugin     = "bad"
)

// TestMain builds the plugin executables into a temporary directory, with
// their manifests, puts it on GOSHMEM_PROVIDER_PATH and registers what it
// finds there, as importing this package does for programs.
func TestMain(m *testing.M) {
	if dir, ok := os.LookupEnv(envPluginDir); ok {
		register(dir)
		if _, ok := os.LookupEnv(envOrphan); ok {
			orphanMain()
		}
		if _, ok := os.LookupEnv(envDeadPluginPE); ok {
			os.Exit(deadPluginPE())
		}
		conformance.Main(m)
		return
	}
	dir, err := os.MkdirTemp("", "plugins")
	if err == nil {
		err = build(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plugin tests:", err)
		os.Exit(1)
	}
	os.Setenv(envPluginDir, dir)
	register(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func register(dir string) {
	os.Setenv(core.EnvProviderPath, dir)
	plugin.RegisterFound(nil)
}

func build(dir string) error {
	for name, pkg := range map[string]string{
		examplePlugin: "github.com/goshmem/goshmem/cmd/goshmem-provider-loopback-plugin",
		tcpPlugin:     "github.com/goshmem/goshmem/cmd/goshmem-provider-tcp-plugin",
		badPlugin:     "./testdata/badplugin",
	} {
		args := []string{"build", "-o", filepath.Join(dir, plugin.Prefix+name)}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		if name == badPlugin {
			continue // its Info depends on its mode: no manifest
		}
		// The manifest, as a plugin writes it itself: what Info lists.
		exe := filepath.Join(dir, plugin.Prefix+name)
		if out, err = exec.Command(exe, plugin.ManifestFlag).Output(); err != nil {
			return fmt.Errorf("%s %s: %v", exe, plugin.ManifestFlag, err)
		}
		if err := os.WriteFile(plugin.ManifestPath(exe), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
