package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// moduleRoot is where go test runs this package from, two levels down.
const moduleRoot = "../.."

// The committed files must be what the generator writes now: a change to
// the tables without "go generate ./capi" fails here, not in a C build.
func TestCommittedFilesAreCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	for rel := range files() {
		fresh, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join(moduleRoot, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./capi)", rel, err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s is stale: run go generate ./capi", rel)
		}
	}
}

// Writing twice leaves a current file alone.
func TestWriteKeepsCurrentFiles(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "include", "shmem.h")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := write(dir); err != nil {
		t.Fatalf("a second write touched a current file: %v", err)
	}
	after, _ := os.Stat(path)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("a current file was rewritten")
	}
}

// Every name is declared once, every generic has members, and every
// generic member is a routine shmem.h declares.
func TestTablesAreConsistent(t *testing.T) {
	a := build()
	declared := map[string]*routine{}
	for _, s := range a.sections {
		for _, r := range s.routines {
			if declared[r.name] != nil {
				t.Errorf("%s declared twice", r.name)
			}
			declared[r.name] = r
		}
	}
	for _, g := range a.generics {
		if len(g.plain) == 0 {
			t.Errorf("generic %s has no members", g.name)
		}
		if len(g.ctx) != 0 && len(g.ctx) != len(g.plain) {
			t.Errorf("generic %s: %d plain and %d context members", g.name, len(g.plain), len(g.ctx))
		}
		seen := map[string]bool{}
		for _, r := range append(append([]*routine{}, g.plain...), g.ctx...) {
			if declared[r.name] != r {
				t.Errorf("generic %s: member %s is not declared", g.name, r.name)
			}
			key := r.params[g.pos].t
			if strings.HasPrefix(r.name, "shmem_ctx_") {
				key = "ctx " + r.params[g.pos+1].t
			}
			if seen[key] {
				t.Errorf("generic %s: two members for %s", g.name, key)
			}
			seen[key] = true
		}
	}
	// The families the specification has, counted once per type.
	counts := map[string]int{}
	for _, s := range a.sections {
		counts[s.title] = len(s.routines)
	}
	want := map[string]int{
		// 24 types x 4 operations x 2 (context) + 5 sizes x 4 x 2 + mem x 4 x 2
		"RMA: put and get, blocking and non-blocking": 24*8 + 5*8 + 8,
		"RMA: single elements":                        24 * 4,
		"RMA: strided":                                24*4 + 5*4,
	}
	for title, n := range want {
		if counts[title] != n {
			t.Errorf("%s: %d routines, want %d", title, counts[title], n)
		}
	}
}

func need(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("%s not found: the C compile checks need it", tool)
	}
	return path
}

// call is one use of a generic interface in a test translation unit: a
// function of its own whose body is the call, and the typed routine the
// call must reach.
type call struct {
	fn, want string
}

// genericTU writes a translation unit with one function per member of
// every generic interface, each calling the generic name with arguments
// of that member's parameter types (and, where the selecting parameter is
// const, once more with a pointer that is not).
func genericTU(a *api, cxx bool) (string, []call) {
	var b strings.Builder
	var calls []call
	b.WriteString("#include <shmem.h>\n#include <shmemx.h>\n\n")
	if cxx {
		b.WriteString("extern \"C\" {\n")
	}
	n := 0
	emit := func(generic string, r *routine, sel int) {
		variants := [][]param{r.params}
		if t := r.params[sel].t; strings.HasPrefix(t, "const ") {
			ps := append([]param{}, r.params...)
			ps[sel].t = strings.TrimPrefix(t, "const ")
			variants = append(variants, ps)
		}
		for _, ps := range variants {
			n++
			name := fmt.Sprintf("gsh_t%d", n)
			decl := make([]string, len(ps))
			args := make([]string, len(ps))
			for i, p := range ps {
				decl[i] = cdecl(p.t, fmt.Sprintf("a%d", i))
				args[i] = fmt.Sprintf("a%d", i)
			}
			ret := "return "
			if r.ret == "void" {
				ret = ""
			}
			fmt.Fprintf(&b, "%s%s(%s) { %s%s(%s); }\n", retPrefix(r.ret), name, strings.Join(decl, ", "), ret, generic, strings.Join(args, ", "))
			calls = append(calls, call{name, r.name})
		}
	}
	for _, g := range a.generics {
		for _, r := range g.plain {
			emit(g.name, r, g.pos)
		}
		for _, r := range g.ctx {
			emit(g.name, r, g.pos+1)
		}
	}
	// The team barrier and the active-set one share a name.
	b.WriteString("int gsh_sync1(shmem_team_t t) { return shmem_sync(t); }\n")
	b.WriteString("void gsh_sync4(int a, int b, int c, long *d) { shmem_sync(a, b, c, d); }\n")
	calls = append(calls, call{"gsh_sync1", "shmem_team_sync"}, call{"gsh_sync4", "shmem_sync"})
	if cxx {
		b.WriteString("}\n")
	}
	return b.String(), calls
}

// compile runs the compiler on src and returns its assembly.
func compile(t *testing.T, cc string, flags []string, name, src string) string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, name)
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.s")
	args := append(append([]string{}, flags...), "-I", filepath.Join(moduleRoot, "include"), "-S", "-o", out, in)
	cmd := exec.Command(cc, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		lines := strings.SplitN(string(msg), "\n", 40)
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(flags, " "), err, strings.Join(lines, "\n"))
	}
	asm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(asm)
}

var callInsn = regexp.MustCompile(`^\s+(?:call|jmp|bl|b)\s+([A-Za-z_][A-Za-z0-9_]*)`)

// checkCalls reads, per test function, the routines its code calls or
// jumps to, and wants the expected typed routine among them. It knows the
// assembly of amd64 and arm64; elsewhere the compile alone is the check.
func checkCalls(t *testing.T, asm string, calls []call) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return
	}
	reached := map[string]map[string]bool{}
	cur := ""
	for _, line := range strings.Split(asm, "\n") {
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, ".") && !strings.HasPrefix(line, "\t") {
			cur = strings.TrimSuffix(line, ":")
			continue
		}
		if m := callInsn.FindStringSubmatch(line); m != nil && cur != "" {
			if reached[cur] == nil {
				reached[cur] = map[string]bool{}
			}
			reached[cur][m[1]] = true
		}
	}
	bad := 0
	for _, c := range calls {
		if !reached[c.fn][c.want] {
			var got []string
			for s := range reached[c.fn] {
				got = append(got, s)
			}
			sort.Strings(got)
			t.Errorf("%s reaches %v, want %s", c.fn, got, c.want)
			if bad++; bad > 20 {
				t.Fatal("too many wrong selections")
			}
		}
	}
}

// Every C11 generic selects the routine of each member's type, with and
// without a context, and the header is warning-free.
func TestC11Generics(t *testing.T) {
	t.Parallel()
	cc := need(t, "gcc")
	src, calls := genericTU(build(), false)
	asm := compile(t, cc, []string{"-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic"}, "generic.c", src)
	checkCalls(t, asm, calls)
}

// Every C++ overload forwards to the routine of its type.
func TestCXXOverloads(t *testing.T) {
	t.Parallel()
	cxx := need(t, "g++")
	src, calls := genericTU(build(), true)
	asm := compile(t, cxx, []string{"-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror"}, "generic.cpp", src)
	checkCalls(t, asm, calls)
}

// Without C11, shmem.h is plain declarations, and the untyped 1.x names
// are functions.
func TestC99Header(t *testing.T) {
	t.Parallel()
	cc := need(t, "gcc")
	src := `#include <shmem.h>
void gsh_w1(long *a, int c, long v) { shmem_wait_until(a, c, v); }
void gsh_w2(long *a, long v) { shmem_wait(a, v); }
`
	asm := compile(t, cc, []string{"-std=c99", "-O2", "-Wall", "-Wextra", "-Werror"}, "c99.c", src)
	checkCalls(t, asm, []call{{"gsh_w1", "shmem_wait_until"}, {"gsh_w2", "shmem_wait"}})
}

// typed_gen.c compiles warning-free against impl.h, and defines every
// routine the generator gave a body.
func TestTypedRoutinesCompile(t *testing.T) {
	t.Parallel()
	cc := need(t, "gcc")
	capi := filepath.Join(moduleRoot, "capi")
	if _, err := os.Stat(filepath.Join(capi, "impl.h")); err != nil {
		t.Skip("capi/impl.h not present")
	}
	dir := t.TempDir()
	obj := filepath.Join(dir, "typed.o")
	cmd := exec.Command(cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
		"-I", capi, "-I", filepath.Join(moduleRoot, "include"), "-c", "-o", obj, filepath.Join(capi, "typed_gen.c"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		lines := strings.SplitN(string(msg), "\n", 40)
		t.Fatalf("%v\n%s", err, strings.Join(lines, "\n"))
	}
	nm, err := exec.LookPath("nm")
	if err != nil {
		return
	}
	out, err := exec.Command(nm, "-g", "--defined-only", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			defined[f[2]] = true
		}
	}
	want := 0
	for _, s := range build().sections {
		for _, r := range s.routines {
			if r.body == "" {
				if defined[r.name] {
					t.Errorf("%s is the runtime's, but typed_gen.c defines it", r.name)
				}
				continue
			}
			want++
			if !defined[r.name] {
				t.Errorf("%s is not defined", r.name)
			}
			if profiled(r) {
				want++
				if !defined[pname(r)] {
					t.Errorf("%s, the profiling name of %s, is not defined", pname(r), r.name)
				}
			}
		}
	}
	if len(defined) != want {
		t.Errorf("typed_gen.c defines %d symbols, want %d", len(defined), want)
	}
}

// A C++ program may include the header inside its own extern "C" block;
// the overloads must still compile there.
func TestCXXHeaderInsideExternC(t *testing.T) {
	t.Parallel()
	cxx := need(t, "g++")
	src := `extern "C" {
#include <shmem.h>
}
extern "C" int gsh_x(int *x) { shmem_p(x, 1, 0); return shmem_g(SHMEM_CTX_DEFAULT, x, 0); }
`
	asm := compile(t, cxx, []string{"-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror"}, "externc.cpp", src)
	checkCalls(t, asm, []call{{"gsh_x", "shmem_int_p"}, {"gsh_x", "shmem_ctx_int_g"}})
}
