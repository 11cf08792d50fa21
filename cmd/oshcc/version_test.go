package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/version"
)

// --version answers for goshmem without running the compiler, and names
// the compiler that would run, under every name and environment.
func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		argv0, flag string
		env         map[string]string
		compiler    string
	}{
		{"oshcc", "--version", nil, "cc"},
		{"oshcc", "-version", map[string]string{"GOSHMEM_CC": "clang"}, "clang"},
		{"oshc++", "--version", nil, "c++"},
	} {
		// The compiler need not exist, nor the layout: neither is asked.
		code, stdout, stderr := wrap(t, tc.env, tc.argv0, "-O2", tc.flag)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, version.Line(tc.argv0)+"\ncompiler: "+tc.compiler, stdout)
	}
}
