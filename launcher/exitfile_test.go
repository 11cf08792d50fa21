package launcher

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A PE's global_exit ends the whole job with its status, 0 included,
// although the other PEs are still running.
func TestGlobalExitEndsJobWithItsStatus(t *testing.T) {
	for _, status := range []int{0, 5} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			r := launch(t, context.Background(), 3, "globalexit", []string{"1", strconv.Itoa(status)})
			require.NoError(t, r.err)
			require.Equal(t, status, r.code)
			require.Contains(t, r.stderr, fmt.Sprintf("oshrun: PE 1 called global_exit(%d); terminating the job (2 PEs still running)", status))
		})
	}
}

// When the library ends the job on an error, the launcher says so and
// repeats why, instead of naming a global_exit the program never called.
func TestLibraryExitIsNoGlobalExit(t *testing.T) {
	const why = "the goshmem library failed in shmem_long_p: shmem: p: PE 3 is out of range"
	r := launch(t, context.Background(), 3, "globalexit", []string{"1", "1", why})
	require.NoError(t, r.err)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "oshrun: PE 1 ended the job with status 1: "+why+"; terminating the job (2 PEs still running)")
	require.NotContains(t, r.stderr, "global_exit")
}
