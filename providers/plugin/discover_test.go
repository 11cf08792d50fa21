package plugin_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/plugin"
)

func TestFind(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	file := func(dir, name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	x := file(a, plugin.Prefix+"x", 0o755)
	file(b, plugin.Prefix+"x", 0o755) // shadowed by a's, as on PATH
	y := file(b, plugin.Prefix+"y", 0o755)
	file(a, plugin.Prefix+"notexec", 0o644)
	file(a, plugin.Prefix+"Bad.Name", 0o755)
	file(a, "other-program", 0o755)
	if err := os.Mkdir(filepath.Join(a, plugin.Prefix+"dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := plugin.Find(strings.Join([]string{a, "", filepath.Join(a, "missing"), b}, string(os.PathListSeparator)))
	want := []plugin.Found{{Name: "x", Path: x}, {Name: "y", Path: y}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Find: got %+v, want %+v", got, want)
	}
}

// TestRegistered: the example plugin, registered by TestMain, is a
// provider like the others, marked as a plugin.
func TestRegistered(t *testing.T) {
	p, err := core.Lookup(examplePlugin)
	if err != nil {
		t.Fatal(err)
	}
	in := p.Info()
	want := "plugin " + filepath.Join(os.Getenv(envPluginDir), plugin.Prefix+examplePlugin) + ", protocol 1"
	if in.Name != examplePlugin || in.Origin != want {
		t.Fatalf("name %q, origin %q; want %q, %q", in.Name, in.Origin, examplePlugin, want)
	}
	if in.Caps.Has(core.CapDirectAccess) || !in.Caps.Has(core.CapRMA|core.CapFetchAtomic) {
		t.Fatalf("capabilities %v: want the wrapped provider's without direct access", in.Caps)
	}
	if _, ok := in.Param("TIMEOUT"); !ok {
		t.Fatalf("no TIMEOUT parameter in %+v", in.Params)
	}
	if !strings.Contains(strings.Join(core.Names(), " "), examplePlugin) {
		t.Fatalf("%s missing from %v", examplePlugin, core.Names())
	}
}
