package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/version"
)

func TestVersion(t *testing.T) {
	for _, spelling := range []string{"-version", "--version"} {
		code, stdout, stderr := runArgs(spelling)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, version.Line("provinfo")+"\n", stdout)
		require.Empty(t, stderr)
	}
}
