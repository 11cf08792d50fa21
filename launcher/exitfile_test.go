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

func TestWriteGlobalExitFirstCallerWins(t *testing.T) {
	dir := t.TempDir() + "/job"
	_, _, ok := ReadGlobalExit(dir)
	require.False(t, ok, "no file yet")
	require.NoError(t, WriteGlobalExit(dir, 2, 7))
	require.NoError(t, WriteGlobalExit(dir, 0, 9))
	pe, status, ok := ReadGlobalExit(dir)
	require.True(t, ok)
	require.Equal(t, [2]int{2, 7}, [2]int{pe, status})
}

func FuzzParseGlobalExit(f *testing.F) {
	for _, s := range []string{"1 0\n", "0 255\n", "3 -1\n", "", "x y", "1 2 3", "-1 4"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pe, status, ok := parseGlobalExit(b)
		if !ok {
			return
		}
		require.GreaterOrEqual(t, pe, 0)
		again, st2, ok2 := parseGlobalExit(fmt.Appendf(nil, "%d %d\n", pe, status))
		require.True(t, ok2)
		require.Equal(t, [2]int{pe, status}, [2]int{again, st2})
	})
}
