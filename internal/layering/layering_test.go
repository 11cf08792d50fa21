// Package layering holds the test that keeps goshmem's layers honest: core
// knows no provider and no x/sys, providers know no shmem, shmem knows no
// provider, and only internal/sys touches x/sys. It reads the import graph
// with `go list`, so it checks the real build, not a convention.
package layering

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/goshmem/goshmem"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-json", module+"/...").Output()
	require.NoError(t, err, "go list")
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		require.NoError(t, dec.Decode(&p))
		pkgs[p.ImportPath] = p
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

func under(path, prefix string) bool {
	prefix = module + "/" + prefix
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	rules := []struct {
		who, must string
		forbidden func(dep string) bool
	}{
		{"core", "import no provider, no shmem and no x/sys", func(d string) bool {
			return under(d, "providers") || under(d, "shmem") || under(d, "internal/sys") || strings.HasPrefix(d, "golang.org/x/sys")
		}},
		{"providers", "import no shmem", func(d string) bool { return under(d, "shmem") || under(d, "conformance") }},
		{"shmem", "import no provider", func(d string) bool { return under(d, "providers") }},
		{"internal/mem", "import no x/sys", func(d string) bool { return strings.HasPrefix(d, "golang.org/x/sys") }},
	}
	for _, r := range rules {
		checked := 0
		for path, p := range pkgs {
			if !under(path, r.who) {
				continue
			}
			checked++
			for _, d := range p.Deps {
				if r.forbidden(d) {
					t.Errorf("%s must %s, but depends on %s", path, r.must, d)
				}
			}
		}
		require.NotZero(t, checked, "no package under %s: is the rule stale?", r.who)
	}
	for path, p := range pkgs {
		if under(path, "internal/sys") {
			continue
		}
		for _, d := range p.Imports {
			if strings.HasPrefix(d, "golang.org/x/sys") {
				t.Errorf("%s imports %s: only internal/sys may import x/sys", path, d)
			}
		}
	}
}
