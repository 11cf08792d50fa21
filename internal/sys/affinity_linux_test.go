//go:build linux

package sys

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A process started inside OnCPU runs on that CPU only, and the calling
// thread gets its whole set back.
func TestOnCPUBindsChild(t *testing.T) {
	cpus, err := CPUs()
	require.NoError(t, err)
	require.NotEmpty(t, cpus)
	last := cpus[len(cpus)-1]
	var out []byte
	require.NoError(t, OnCPU(last, func() error {
		out, err = exec.Command("grep", "Cpus_allowed_list", "/proc/self/status").Output()
		return err
	}))
	require.Equal(t, "Cpus_allowed_list:\t"+strconv.Itoa(last), strings.TrimSpace(string(out)))
	after, err := CPUs()
	require.NoError(t, err)
	require.Equal(t, cpus, after)
}
