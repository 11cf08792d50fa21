package shmem_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/version"
	"github.com/goshmem/goshmem/shmem"
)

// SHMEM_VERSION makes PE 0 print the spec version and the build, and
// nothing of SHMEM_INFO's parameters.
func TestVersionEnvironment(t *testing.T) {
	out := captureStderr(t, func() {
		world(t, 2, map[string]string{shmem.EnvVersion: "1"}, nil,
			func(pe int, w *shmem.World, err error) { require.NoError(t, err) })
	})
	want := fmt.Sprintf("goshmem: OpenSHMEM %d.%d (%s), build %s\n",
		shmem.MajorVersion, shmem.MinorVersion, shmem.VendorString, version.Read())
	require.Contains(t, out, want)
	require.Equal(t, 1, strings.Count(out, "goshmem: OpenSHMEM"), "only PE 0 prints")
	require.NotContains(t, out, "goshmem: provider", "the parameters are SHMEM_INFO's")
}
