package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// OpenSHMEM 1.6, shmem_init: it may be called more than once, and the
// library stays initialized until shmem_finalize has been called as many
// times; shmem_query_initialized says which, at any time.
func TestInitCounted(t *testing.T) {
	noEnv := shmem.WithEnv(func(string) (string, bool) { return "", false })
	require.False(t, shmem.Initialized(), "initialized before Init")
	w, err := shmem.Init(noEnv, shmem.WithHeapSize(shmem.MinHeapSize))
	require.NoError(t, err)
	require.True(t, shmem.Initialized())
	again, err := shmem.Init(noEnv)
	require.NoError(t, err)
	require.Same(t, w, again, "a later Init returns the job's World")
	require.Equal(t, 2, w.InitCount())

	require.NoError(t, w.Finalize())
	require.True(t, shmem.Initialized(), "the first of two Finalizes ends nothing")
	require.True(t, w.Initialized())
	require.NoError(t, w.BarrierAll(), "the World still works")

	require.NoError(t, w.Finalize())
	require.False(t, shmem.Initialized(), "the last Finalize ends it")
	require.False(t, w.Initialized())
	require.Equal(t, 0, w.InitCount())
	require.NoError(t, w.Finalize(), "Finalize stays idempotent")
	require.Error(t, w.BarrierAll())
}
