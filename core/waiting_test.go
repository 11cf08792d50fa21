package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// The waiting policy spins long only while every PE on the host has a
// CPU; a Config without one derives it from the job's size, and one that
// has it hands it on unchanged.
func TestWaiting(t *testing.T) {
	require.Equal(t, core.Waiting{Polls: core.SoloPolls, Solo: true}, core.NewWaiting(2, 2))
	require.Equal(t, core.Waiting{Polls: core.SharedPolls}, core.NewWaiting(8, 2))
	require.Less(t, core.SharedPolls, core.SoloPolls)

	env := map[string]string{core.EnvCPUs: "2"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	boots := bootstrapLocal(3)
	cfg := &core.Config{Bootstrap: boots[0], Env: lookup}
	w, err := cfg.Wait()
	require.NoError(t, err)
	require.Equal(t, core.NewWaiting(3, 2), w, "three PEs, as if on this host, on two CPUs")
	cfg.Bootstrap = nil
	w, err = cfg.Wait()
	require.NoError(t, err)
	require.True(t, w.Solo, "one PE")
	given := core.Waiting{Polls: 7}
	cfg.Waiting = &given
	w, err = cfg.Wait()
	require.NoError(t, err)
	require.Equal(t, given, w)
	cfg.Waiting = nil
	env[core.EnvCPUs] = "none"
	_, err = cfg.Wait()
	require.ErrorIs(t, err, core.ErrInvalid)
	for _, b := range boots {
		require.NoError(t, b.Close())
	}
}
