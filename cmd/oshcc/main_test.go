package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakePrefix makes an installed layout with an empty shmem.h.
func fakePrefix(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(top, "include"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(top, "include", "shmem.h"), nil, 0o644))
	return top
}

func wrap(t *testing.T, env map[string]string, argv ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(argv, func(k string) string { return env[k] }, &out, &errb)
	return code, strings.TrimSpace(out.String()), strings.TrimSpace(errb.String())
}

func TestShowme(t *testing.T) {
	top := fakePrefix(t)
	inc, lib := filepath.Join(top, "include"), filepath.Join(top, "lib")
	env := map[string]string{"GOSHMEM_PREFIX": top}
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"oshcc", "--showme", "-O2", "p.c", "-o", "p"},
			"cc -I" + inc + " -O2 p.c -o p -L" + lib + " -Wl,-rpath," + lib + " -lgoshmem -lpthread"},
		{[]string{"oshcc", "--showme", "-c", "p.c"}, "cc -I" + inc + " -c p.c"},
		{[]string{"/usr/bin/oshc++", "--showme", "p.cpp"},
			"c++ -I" + inc + " p.cpp -L" + lib + " -Wl,-rpath," + lib + " -lgoshmem -lpthread"},
		{[]string{"oshcc", "--showme:compile"}, "-I" + inc},
		{[]string{"oshcc", "--showme:link"}, "-L" + lib + " -Wl,-rpath," + lib + " -lgoshmem -lpthread"},
		{[]string{"oshcc", "--showme:incdirs"}, inc},
	}
	for _, tt := range tests {
		code, out, errOut := wrap(t, env, tt.argv...)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, tt.want, out, tt.argv)
	}
	env["GOSHMEM_CC"] = "clang"
	_, out, _ := wrap(t, env, "oshcc", "--showme", "p.c")
	require.True(t, strings.HasPrefix(out, "clang "), out)
}

func TestMissingLayoutSaysWhere(t *testing.T) {
	top := t.TempDir()
	code, _, errOut := wrap(t, map[string]string{"GOSHMEM_PREFIX": top}, "oshcc", "p.c")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "shmem.h is not in "+filepath.Join(top, "include"))
	require.Contains(t, errOut, "GOSHMEM_PREFIX")
}

func TestNoInputAndMissingCompiler(t *testing.T) {
	top := fakePrefix(t)
	code, _, errOut := wrap(t, map[string]string{"GOSHMEM_PREFIX": top}, "oshcc")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no input files")
	code, _, errOut = wrap(t, map[string]string{"GOSHMEM_PREFIX": top, "GOSHMEM_CC": "no-such-compiler-here"}, "oshcc", "p.c")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `"no-such-compiler-here" is not on PATH`)
	require.Contains(t, errOut, "GOSHMEM_CC")
}

func TestNames(t *testing.T) {
	require.True(t, isCXX("/x/oshc++"))
	require.True(t, isCXX("oshCC"))
	require.False(t, isCXX("oshcc"))
	require.True(t, compileOnly([]string{"-O2", "-c", "a.c"}))
	require.False(t, compileOnly([]string{"a.c", "-o", "a"}))
}
