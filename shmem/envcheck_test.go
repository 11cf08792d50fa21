package shmem_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// A GOSHMEM_SHM_DIR that does not exist is refused naming it, on every
// PE, and is not created.
func TestInitShmDirMissing(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "nonexistent", "dir")
	lookup := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return missing, true
		}
		return "", false
	}
	id := jobID()
	var wg sync.WaitGroup
	for _, b := range bootstrap.NewLocal(2) {
		wg.Go(func() {
			w, err := shmem.Init(shmem.WithBootstrap(b, id), shmem.WithEnv(lookup), shmem.WithHeapSize(1<<20))
			if w != nil {
				require.NoError(t, w.Finalize())
				require.Fail(t, "init succeeded with a missing "+core.EnvShmDir)
			}
			require.ErrorIs(t, err, shmem.ErrInvalid)
			require.ErrorContains(t, err, `GOSHMEM_SHM_DIR="`+missing+`" is malformed: allowed an existing directory`)
		})
	}
	wg.Wait()
	require.NoDirExists(t, filepath.Join(base, "nonexistent"))
}
