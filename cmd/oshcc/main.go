// Command oshcc compiles and links C programs against goshmem's OpenSHMEM
// library, as Open MPI's and Sandia OpenSHMEM's wrappers do: it runs the C
// compiler with every argument it was given, adding the include directory,
// the library and an rpath so the program finds the library at run time.
// Invoked as oshc++ (or oshcxx, oshCC) it drives the C++ compiler.
//
//	oshcc -O2 prog.c -o prog
//	oshcc --showme            # print the command instead of running it
//	oshcc --showme:compile    # only the flags for compiling
//	oshcc --showme:link       # only the flags for linking
//	oshcc --version           # goshmem's version and the compiler it runs
//
// The include and lib directories are found beside the directory that
// holds oshcc (bin/../include, bin/../lib), in the build tree and after
// make install alike; GOSHMEM_PREFIX names another top directory. GOSHMEM_CC
// and GOSHMEM_CXX name other compilers.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/goshmem/goshmem/capi/cenv"
	"github.com/goshmem/goshmem/internal/version"
)

func main() {
	os.Exit(run(os.Args, os.Getenv, os.Stdout, os.Stderr))
}

// layout is where the wrapper finds goshmem's header and library.
type layout struct{ include, lib string }

// lookupOf reads the environment through getenv, where empty is unset.
func lookupOf(getenv func(string) string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	}
}

func findLayout(getenv func(string) string) (layout, error) {
	top, set := cenv.Prefix.Lookup(lookupOf(getenv))
	from := cenv.Prefix.Env
	if !set {
		exe, err := os.Executable()
		if err != nil {
			return layout{}, err
		}
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		top, from = filepath.Dir(filepath.Dir(exe)), "the directory above "+filepath.Dir(exe)
	}
	l := layout{include: filepath.Join(top, "include"), lib: filepath.Join(top, "lib")}
	if _, err := os.Stat(filepath.Join(l.include, "shmem.h")); err != nil {
		return l, fmt.Errorf("shmem.h is not in %s (the include directory of %s): %w", l.include, from, err)
	}
	return l, nil
}

// isCXX reports whether the wrapper was invoked under a C++ name.
func isCXX(argv0 string) bool {
	switch strings.TrimSuffix(filepath.Base(argv0), ".exe") {
	case "oshc++", "oshcxx", "oshCC", "oshc++-goshmem":
		return true
	}
	return false
}

// compileOnly reports whether args stop before linking (-c, -E, -S, -M, -MM).
func compileOnly(args []string) bool {
	for _, a := range args {
		switch a {
		case "-c", "-E", "-S", "-M", "-MM", "-fsyntax-only":
			return true
		}
	}
	return false
}

func compileFlags(l layout) []string { return []string{"-I" + l.include} }

func linkFlags(l layout) []string {
	return []string{"-L" + l.lib, "-Wl,-rpath," + l.lib, "-lgoshmem", "-lpthread"}
}

func run(argv []string, getenv func(string) string, stdout, stderr io.Writer) int {
	name := filepath.Base(argv[0])
	compilerParam := cenv.CC
	if isCXX(argv[0]) {
		compilerParam = cenv.CXX
	}
	compiler := compilerParam.Get(lookupOf(getenv))
	args := argv[1:]
	show := ""
	var rest []string
	for _, a := range args {
		switch a {
		case "--showme", "-showme", "--showme:command", "--showme:compile", "--showme:link", "--showme:libdirs", "--showme:incdirs":
			show = a
		case "--version", "-version":
			// goshmem's version, not the compiler's: --showme names the
			// compiler, which answers for itself.
			fmt.Fprintln(stdout, version.Line(name))
			fmt.Fprintf(stdout, "compiler: %s\n", compiler)
			return 0
		case "--help", "-help":
			fmt.Fprintf(stdout, "usage: %s [--showme[:compile|:link|:incdirs|:libdirs]] [compiler arguments...]\n"+
				"Runs %s (%s) with goshmem's include directory, library and rpath added.\n", name, compiler, compilerParam.Env)
			return 0
		default:
			rest = append(rest, a)
		}
	}
	l, err := findLayout(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	switch show {
	case "--showme:compile":
		fmt.Fprintln(stdout, strings.Join(compileFlags(l), " "))
		return 0
	case "--showme:link":
		fmt.Fprintln(stdout, strings.Join(linkFlags(l), " "))
		return 0
	case "--showme:incdirs":
		fmt.Fprintln(stdout, l.include)
		return 0
	case "--showme:libdirs":
		fmt.Fprintln(stdout, l.lib)
		return 0
	}
	cmd := append([]string{compiler}, compileFlags(l)...)
	cmd = append(cmd, rest...)
	if !compileOnly(rest) && len(rest) > 0 {
		cmd = append(cmd, linkFlags(l)...)
	}
	if show != "" {
		fmt.Fprintln(stdout, strings.Join(cmd, " "))
		return 0
	}
	if len(rest) == 0 {
		fmt.Fprintf(stderr, "%s: no input files (--showme prints the command, --help the usage)\n", name)
		return 1
	}
	path, err := exec.LookPath(compiler)
	if err != nil {
		fmt.Fprintf(stderr, "%s: the compiler %q is not on PATH (set %s to another): %v\n", name, compiler, compilerParam.Env, err)
		return 1
	}
	// exec, so the compiler's status and signals are the wrapper's own.
	err = syscall.Exec(path, cmd, os.Environ())
	var errno syscall.Errno
	if errors.As(err, &errno) {
		fmt.Fprintf(stderr, "%s: running %s: %v\n", name, path, err)
	}
	return 1
}
