package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// TestSource: a source is consulted once, at the first lookup after it
// was added, and never takes a registered provider's name.
func TestSource(t *testing.T) {
	core.Register(fakeProvider{name: "source-builtin"})
	calls := 0
	core.AddSource(func(taken func(string) bool) []core.Provider {
		calls++
		require.True(t, taken("source-builtin"))
		require.False(t, taken("source-found"))
		// A careless source offering a taken name is not believed.
		return []core.Provider{fakeProvider{name: "source-found"}, fakeProvider{name: "source-builtin"}, nil}
	})
	require.Zero(t, calls, "consulted before any lookup")
	p, err := core.Lookup("source-found")
	require.NoError(t, err)
	require.Equal(t, "source-found", p.Name())
	require.Contains(t, core.Names(), "source-builtin")
	_, err = core.Select("source-found", 1)
	require.NoError(t, err)
	require.Equal(t, 1, calls)
}
