package core_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// GOSHMEM_EMULATED_HOST splits a machine into hosts: the name is added to
// the machine's identity, never put in its place.
func TestEmulatedHost(t *testing.T) {
	t.Setenv(core.EnvEmulatedHost, "")
	machine := core.HostID()
	t.Setenv(core.EnvEmulatedHost, "ring-host_1.a")
	name, err := core.EmulatedHost()
	require.NoError(t, err)
	require.Equal(t, "ring-host_1.a", name)
	require.Equal(t, machine+"#ring-host_1.a", core.HostID())
	t.Setenv(core.EnvEmulatedHost, "ring-host-2")
	require.Equal(t, machine+"#ring-host-2", core.HostID())

	for _, bad := range []string{"a b", "a/b", "a#b", "\u00e9", strings.Repeat("x", 65)} {
		t.Setenv(core.EnvEmulatedHost, bad)
		_, err := core.EmulatedHost()
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee, "%q", bad)
		require.Equal(t, core.EnvEmulatedHost, ee.Var)
		require.Contains(t, err.Error(), "letters, digits")
		require.Equal(t, machine, core.HostID(), "a malformed name %q is not used", bad)
	}
}

// A malformed GOSHMEM_EMULATED_HOST fails Open on every PE, naming it.
func TestEmulatedHostBadFailsOpen(t *testing.T) {
	registerFakes()
	t.Setenv(core.EnvEmulatedHost, "no spaces")
	boots := bootstrapLocal(2)
	errs := make([]error, len(boots))
	var wg sync.WaitGroup
	for pe, b := range boots {
		wg.Go(func() {
			_, _, errs[pe] = core.Open(&core.Config{Bootstrap: b, JobID: "emuhost"}, "t-net")
		})
	}
	wg.Wait()
	for pe, err := range errs {
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee, "PE %d", pe)
		require.Equal(t, core.EnvEmulatedHost, ee.Var, "PE %d", pe)
	}
}
