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
