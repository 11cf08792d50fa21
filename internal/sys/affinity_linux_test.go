//go:build linux

package sys

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A process started inside OnCPUs runs on those CPUs only, and the
// calling thread gets its whole set back.
func TestOnCPUsBindsChild(t *testing.T) {
	cpus, err := CPUs()
	require.NoError(t, err)
	require.NotEmpty(t, cpus)
	last := cpus[len(cpus)-1]
	var out []byte
	require.NoError(t, OnCPUs([]int{last}, func() error {
		out, err = exec.Command("grep", "Cpus_allowed_list", "/proc/self/status").Output()
		return err
	}))
	require.Equal(t, "Cpus_allowed_list:\t"+strconv.Itoa(last), strings.TrimSpace(string(out)))
	after, err := CPUs()
	require.NoError(t, err)
	require.Equal(t, cpus, after)

	// No CPUs: unbound, the caller's whole set.
	var unbound []int
	require.NoError(t, OnCPUs(nil, func() error { unbound, err = CPUs(); return err }))
	require.Equal(t, cpus, unbound)

	if len(cpus) >= 2 {
		require.NoError(t, OnCPUs(cpus[:2], func() error {
			out, err = exec.Command("grep", "Cpus_allowed_list", "/proc/self/status").Output()
			return err
		}))
		want := strconv.Itoa(cpus[0]) + "," + strconv.Itoa(cpus[1])
		if cpus[1] == cpus[0]+1 {
			want = strconv.Itoa(cpus[0]) + "-" + strconv.Itoa(cpus[1])
		}
		require.Equal(t, "Cpus_allowed_list:\t"+want, strings.TrimSpace(string(out)))
	}
}
