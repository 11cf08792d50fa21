package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func requireEnvError(t *testing.T, err error, name, value string, allowed ...string) {
	t.Helper()
	var ee *core.EnvError
	require.ErrorAs(t, err, &ee)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.Equal(t, name, ee.Var)
	require.Equal(t, value, ee.Value)
	for _, s := range allowed {
		require.Contains(t, ee.Allowed, s)
	}
}

// GOSHMEM_PROVIDER: a bare "^" and a list that both prefers and excludes
// are refused naming the variable; a list of exclusions works whether
// each name has its "^" or only the first.
func TestSelectSpecSyntax(t *testing.T) {
	registerFakes()
	for _, spec := range []string{"^t-shm,^t-ring", "^t-shm,t-ring", " ^ t-shm , ^t-ring "} {
		p, err := core.Select(spec, 1)
		require.NoError(t, err, spec)
		require.Equal(t, "t-net", p.Name(), spec)
	}
	for spec, why := range map[string]string{
		"^":              "an empty name",
		"^,t-net":        "an empty name",
		"t-shm,^t-net":   `"^t-net" excludes a provider in a list of preferred ones`,
		"^^t-shm":        "more than one ^",
		"t-shm,,t-net":   "an empty name",
		"t-shm,^":        "an empty name",
		"^t-shm,^^t-net": "more than one ^",
	} {
		_, err := core.Select(spec, 1)
		requireEnvError(t, err, core.EnvProvider, spec, "a list of providers to exclude", why)
	}
	_, err := core.Select("^t-shm,^bogus", 1)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.ErrorContains(t, err, `GOSHMEM_PROVIDER="^t-shm,^bogus": unknown provider "bogus"`)
	_, err = core.Select("^t-net", 2)
	require.ErrorIs(t, err, core.ErrNotSupported)
	require.ErrorContains(t, err, "GOSHMEM_PROVIDER=^t-net excludes every provider")
}
