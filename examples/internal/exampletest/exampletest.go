// Package exampletest builds an example program and the launcher for the
// examples' tests, which run them as a user would.
package exampletest

import (
	"os/exec"
	"path"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Build compiles oshrun and the example with import path pkg into a
// temporary directory and returns the two executables' paths.
func Build(t testing.TB, pkg string) (oshrun, example string) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/goshmem/goshmem/cmd/oshrun", pkg).CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return filepath.Join(dir, "oshrun"), filepath.Join(dir, path.Base(pkg))
}
