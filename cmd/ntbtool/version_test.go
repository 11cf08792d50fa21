package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/version"
)

func TestVersion(t *testing.T) {
	for _, spelling := range []string{"-version", "--version", "version"} {
		code, stdout, stderr := runCmd(spelling)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, version.Line("ntbtool")+"\n", stdout)
		require.Empty(t, stderr)
	}
}
