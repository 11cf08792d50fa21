package tcp_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/core/bootstrap"
	"github.com/goshmem/goshmem/shmem"
)

// A heap larger than this provider's regions can be is refused in the
// user's terms: SHMEM_SYMMETRIC_SIZE, its value and the largest heap the
// provider allows, on every PE; never in the size of the region shmem
// would have asked for.
func TestHeapTooLargeNamesSymmetricSize(t *testing.T) {
	env := map[string]string{core.EnvProvider: "tcp", shmem.EnvSymmetricSize: "1T", core.EnvShmDir: t.TempDir(),
		"GOSHMEM_TCP_ADDR": "127.0.0.1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var wg sync.WaitGroup
	for _, b := range bootstrap.NewLocal(2) {
		wg.Go(func() {
			w, err := shmem.Init(shmem.WithBootstrap(b, "heap-size"), shmem.WithEnv(lookup))
			if w != nil {
				require.NoError(t, w.Finalize())
				require.Fail(t, "init made a heap of 1T")
			}
			require.ErrorIs(t, err, shmem.ErrInvalid)
			require.ErrorContains(t, err, `SHMEM_SYMMETRIC_SIZE="1T" is malformed: allowed a size from 4K to`)
			// shmem keeps a few megabytes of the region for itself.
			require.Regexp(t, `to \d+M with provider tcp \(its regions hold at most \d+ bytes`, err.Error())
		})
	}
	wg.Wait()
}
