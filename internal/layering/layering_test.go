// Package layering holds the test that keeps goshmem's layers honest. It
// reads the import graph with `go list`, so it checks the real build, not
// a convention:
//
//   - core, the contract, knows no provider, no shmem, no bootstrap store,
//     no launcher and no x/sys;
//   - bootstrap, how PEs find each other, knows no provider, no shmem and
//     no launcher;
//   - providers know no shmem, no bootstrap store (they see the job through
//     core.Bootstrap) and no launcher;
//   - shmem knows no provider and no launcher (the global-exit record they
//     share is internal/globalexit's);
//   - a launcher knows no provider and no shmem: it starts processes;
//   - internal packages know none of the layers above core;
//   - only internal/sys imports golang.org/x/sys;
//   - only internal/auth imports crypto/hmac: the job's secret is proved
//     by one handshake, kept in one place;
//   - only internal/sys and internal/mem import unsafe, with two
//     exceptions: capi, the C library, whose cgo boundary passes C
//     pointers by nature, and generated code ("Code generated ... DO NOT
//     EDIT.", the protobuf messages of the plugin protocol), which no one
//     edits by hand. Test files are held to the same rule.
package layering

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/goshmem/goshmem"

type pkg struct {
	ImportPath   string
	Dir          string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	// IgnoredGoFiles are files of another system or build (e.g.
	// linux_only.go, or the other of a race pair): the rule on unsafe
	// holds for them too.
	IgnoredGoFiles []string
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

// anyUnder reports whether path is under one of prefixes.
func anyUnder(path string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return under(path, p) })
}

func xsys(path string) bool { return strings.HasPrefix(path, "golang.org/x/sys") }

func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	rules := []struct {
		who, must string
		except    []string // packages under who the rule does not cover
		forbidden func(dep string) bool
	}{
		{who: "core", must: "import no provider, no shmem, no bootstrap store, no launcher and no x/sys", forbidden: func(d string) bool {
			return anyUnder(d, "providers", "shmem", "bootstrap", "launcher", "conformance", "capi", "internal/sys") || xsys(d)
		}},
		{who: "bootstrap", must: "import no provider, no shmem and no launcher", forbidden: func(d string) bool {
			return anyUnder(d, "providers", "shmem", "launcher", "conformance", "capi")
		}},
		{who: "providers", must: "import no shmem, no bootstrap store and no launcher", forbidden: func(d string) bool {
			return anyUnder(d, "shmem", "conformance", "bootstrap", "launcher", "capi")
		}},
		{who: "shmem", must: "import no provider and no launcher", forbidden: func(d string) bool {
			return anyUnder(d, "providers", "launcher", "conformance", "capi")
		}},
		{who: "launcher", must: "import no provider and no shmem", forbidden: func(d string) bool {
			return anyUnder(d, "providers", "shmem", "conformance", "capi")
		}},
		{who: "internal", except: []string{"internal/layering"}, must: "import no layer above core", forbidden: func(d string) bool {
			return anyUnder(d, "providers", "shmem", "bootstrap", "launcher", "conformance", "capi")
		}},
		{who: "internal/mem", must: "import no x/sys", forbidden: xsys},
	}
	for _, r := range rules {
		checked := 0
		for path, p := range pkgs {
			if !under(path, r.who) || anyUnder(path, r.except...) {
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
		for _, d := range allImports(p) {
			if xsys(d) && !under(path, "internal/sys") {
				t.Errorf("%s imports %s: only internal/sys may import x/sys", path, d)
			}
			if d == "crypto/hmac" && !under(path, "internal/auth") {
				t.Errorf("%s imports crypto/hmac: only internal/auth may, so that the job's secret is proved by one handshake", path)
			}
		}
	}
}

func allImports(p pkg) []string {
	return slices.Concat(p.Imports, p.TestImports, p.XTestImports)
}

// unsafeAllowed are the packages that may import unsafe; see the package
// documentation for why.
var unsafeAllowed = []string{"internal/sys", "internal/mem", "capi"}

// generated matches the line by which Go marks generated files
// (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func TestUnsafeStaysInItsPackages(t *testing.T) {
	pkgs := listPackages(t)
	found := map[string]bool{}
	for path, p := range pkgs {
		if !slices.Contains(allImports(p), "unsafe") && len(p.IgnoredGoFiles) == 0 {
			continue
		}
		// The package imports unsafe somewhere (or has files of another
		// system, which go list does not read): find the files.
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles, p.TestGoFiles, p.XTestGoFiles, p.IgnoredGoFiles) {
			file := filepath.Join(p.Dir, f)
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly|parser.ParseComments)
			require.NoError(t, err)
			uses := false
			for _, imp := range af.Imports {
				if s, _ := strconv.Unquote(imp.Path.Value); s == "unsafe" {
					uses = true
				}
			}
			if !uses {
				continue
			}
			found[path] = true
			if anyUnder(path, unsafeAllowed...) {
				continue
			}
			if isGenerated(af) {
				continue
			}
			t.Errorf("%s/%s imports unsafe: only internal/sys, internal/mem, capi (its cgo boundary) and generated code may; "+
				"use internal/mem's views of memory or internal/sys's system calls", path, f)
		}
	}
	// The rule is not stale: the allowed packages do use unsafe.
	for _, a := range []string{"internal/sys", "internal/mem"} {
		require.True(t, found[module+"/"+a], "%s no longer imports unsafe: is the rule stale?", a)
	}
}

// isGenerated reports whether a comment before the package clause marks
// the file as generated.
func isGenerated(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if generated.MatchString(c.Text) {
				return true
			}
		}
	}
	return false
}
