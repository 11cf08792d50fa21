package conformance

import (
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// HeapTooLarge checks that a heap larger than provider's regions can be
// (size, a SHMEM_SYMMETRIC_SIZE value past its Info.MaxRegionSize) is
// refused on both PEs of a job in the user's terms: SHMEM_SYMMETRIC_SIZE,
// its value and the largest heap the provider allows; never in the size of
// the region shmem would have asked for. env adds the provider's settings.
func HeapTooLarge(t *testing.T, provider, size string, env map[string]string) {
	vars := map[string]string{core.EnvProvider: provider, shmem.EnvSymmetricSize: size, core.EnvShmDir: ShmDir(t)}
	for k, v := range env {
		vars[k] = v
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	jobID := "heap-size-" + randomHex(4) // one job: the same id on every PE
	var wg sync.WaitGroup
	for _, b := range bootstrap.NewLocal(2) {
		wg.Go(func() {
			w, err := shmem.Init(shmem.WithBootstrap(b, jobID), shmem.WithEnv(lookup))
			if w != nil {
				require.NoError(t, w.Finalize())
				require.Failf(t, "heap too large", "init made a heap of %s on %s", size, provider)
			}
			require.ErrorIs(t, err, shmem.ErrInvalid)
			require.ErrorContains(t, err, shmem.EnvSymmetricSize+`="`+size+`" is malformed: allowed a size from 4K to`)
			// shmem keeps a few megabytes of the region for itself.
			require.Regexp(t, `to \d+M with provider `+regexp.QuoteMeta(provider)+` \(its regions hold at most \d+ bytes`, err.Error())
		})
	}
	wg.Wait()
}
