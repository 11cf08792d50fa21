package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readers are the calls that read an environment variable by name: the
// os package's, and the lookup functions the code passes around.
var readers = map[string]bool{"Getenv": true, "LookupEnv": true, "lookup": true, "Lookup": true,
	"get": true, "getenv": true, "env": true, "Env": true, "has": true}

var ours = regexp.MustCompile(`^(GOSHMEM|SHMEM)_`)

// No code reads a GOSHMEM_ or SHMEM_ variable but through the registry
// (core.Declare and Param's readers): a call of os.Getenv, os.LookupEnv
// or a lookup function with one of these names, written out or as a
// constant, fails this test, and so does getenv in the C library, which
// reads what Go parsed. Tests and testdata are exempt.
func TestSettingsReadOnlyThroughRegistry(t *testing.T) {
	root := filepath.Join("..")
	fset := token.NewFileSet()
	var files []*ast.File
	consts := map[string]string{} // package.constant -> value, of ours
	var cfiles []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") && n != ".." || n == "bin" || n == "lib" {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, "_test.go"):
		case strings.HasSuffix(path, ".go"):
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			files = append(files, f)
			for _, decl := range f.Decls {
				if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.CONST {
					for _, spec := range g.Specs {
						vs := spec.(*ast.ValueSpec)
						for i, name := range vs.Names {
							if i < len(vs.Values) {
								if v := literal(vs.Values[i]); ours.MatchString(v) {
									consts[f.Name.Name+"."+name.Name] = v
								}
							}
						}
					}
				}
			}
		case strings.HasPrefix(path, filepath.Join(root, "capi")) && (strings.HasSuffix(path, ".c") || strings.HasSuffix(path, ".h")):
			cfiles = append(cfiles, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 || len(cfiles) == 0 {
		t.Fatalf("scanned %d Go files and %d C files: not the module", len(files), len(cfiles))
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !readers[callee(call.Fun)] {
				return true
			}
			for _, arg := range call.Args {
				name := literal(arg)
				if !ours.MatchString(name) {
					name = consts[qualified(f, arg)]
				}
				if name != "" {
					t.Errorf("%s: %s reads %s by name: declare it (core.Declare) and read it with the Param's readers, through the job's environment",
						fset.Position(call.Pos()), callee(call.Fun), name)
				}
			}
			return true
		})
	}
	getenv := regexp.MustCompile(`\bgetenv\s*\(`)
	for _, path := range cfiles {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if getenv.MatchString(line) {
				t.Errorf("%s:%d: the C library reads the environment; Go reads its variables through the registry and hands C the values (struct gsh_settings)", path, i+1)
			}
		}
	}
}

// literal is the value of a string literal, or "".
func literal(e ast.Expr) string {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		if v, err := strconv.Unquote(b.Value); err == nil {
			return v
		}
	}
	return ""
}

// qualified is package.name of an identifier (in f's package) or a
// selector (pkg.Name), or "".
func qualified(f *ast.File, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return f.Name.Name + "." + e.Name
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			return x.Name + "." + e.Sel.Name
		}
	}
	return ""
}

// callee is the name an identifier or a selector ends in.
func callee(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
