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
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == core.EnvEmulatedHost {
				return v, true
			}
			return "", false
		}
	}
	machine := core.HostID(env(""))
	name, err := core.EmulatedHost(env("ring-host_1.a"))
	require.NoError(t, err)
	require.Equal(t, "ring-host_1.a", name)
	require.Equal(t, machine+"#ring-host_1.a", core.HostID(env("ring-host_1.a")))
	require.Equal(t, machine+"#ring-host-2", core.HostID(env("ring-host-2")))
	t.Setenv(core.EnvEmulatedHost, "from-the-process")
	require.Equal(t, machine+"#from-the-process", core.HostID(nil), "nil reads the process environment")

	for _, bad := range []string{"a b", "a/b", "a#b", "\u00e9", strings.Repeat("x", 65)} {
		_, err := core.EmulatedHost(env(bad))
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee, "%q", bad)
		require.Equal(t, core.EnvEmulatedHost, ee.Var)
		require.Contains(t, err.Error(), "letters, digits")
		require.Equal(t, machine, core.HostID(env(bad)), "a malformed name %q is not used", bad)
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
