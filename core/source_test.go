package core_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// sourceRuns names each run's providers apart: the registry is the
// process's, and -count runs the test again in the same process.
var sourceRuns atomic.Int32

// TestSource: a source is consulted once, at the first lookup after it
// was added, and never takes a registered provider's name.
func TestSource(t *testing.T) {
	run := strconv.Itoa(int(sourceRuns.Add(1)))
	builtin, found := "source-builtin-"+run, "source-found-"+run
	core.Register(fakeProvider{name: builtin})
	calls := 0
	core.AddSource(func(taken func(string) bool, lookup func(string) (string, bool)) []core.Provider {
		if lookup != nil {
			return nil // a job's environment: Open's, not this test's
		}
		calls++
		require.True(t, taken(builtin))
		require.False(t, taken(found))
		// A careless source offering a taken name is not believed.
		return []core.Provider{fakeProvider{name: found}, fakeProvider{name: builtin}, nil}
	})
	require.Zero(t, calls, "consulted before any lookup")
	p, err := core.Lookup(found)
	require.NoError(t, err)
	require.Equal(t, found, p.Name())
	require.Contains(t, core.Names(), builtin)
	_, err = core.Select(found, 1)
	require.NoError(t, err)
	require.Equal(t, 1, calls)
}
