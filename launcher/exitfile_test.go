package launcher

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
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

// The record outlives the PEs: another job's sweep, run after every PE of
// this one has exited (none leaves the job's directory after a global
// exit) and before the launcher has read their exits, finds the launcher
// still owning the directory.
func TestGlobalExitRecordSurvivesSweep(t *testing.T) {
	r := launch(t, context.Background(), 2, "globalexit", []string{"1", "5", "", "swept"})
	require.NoError(t, r.err)
	require.Equal(t, 5, r.code, r.stderr)
	require.Contains(t, r.stderr, "oshrun: PE 1 called global_exit(5)")
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

// The verbose output says "finalized" only of a PE that closed its store
// connection cleanly and exited 0: a PE whose init failed closes it
// cleanly too. And it says how each PE exited once: the line that ends
// the job does not repeat the one before it.
func TestVerboseSaysEachExitOnce(t *testing.T) {
	r := launch(t, context.Background(), 3, "initfail", nil, func(o *Options) { o.Verbose = true })
	require.NoError(t, r.err)
	require.Equal(t, 3, r.code, r.stderr)
	require.NotContains(t, r.stderr, "PE 1 finalized")
	require.NotRegexp(t, `PE 1 \(pid \d+\) finalized`, r.stderr)
	require.Len(t, regexp.MustCompile(`PE 1 \(pid \d+\) exited with status 3`).FindAllString(r.stderr, -1), 1, r.stderr)
	require.Regexp(t, `oshrun: PE 1 \(pid \d+\) failed first \(exit status 3\)`, r.stderr)
	for _, l := range strings.Split(r.stderr, "\n") {
		for _, pe := range []string{"PE 0 ", "PE 2 "} {
			if strings.Contains(l, pe) && strings.Contains(l, "exited with status 0") {
				require.Contains(t, l, "finalized and exited with status 0", "a PE that closed cleanly and exited 0 finalized")
			}
		}
	}
}

// Without -v the line that ends the job says how the PE exited, once.
func TestQuietSaysTheExitOnce(t *testing.T) {
	r := launch(t, context.Background(), 3, "initfail", nil)
	require.Equal(t, 3, r.code, r.stderr)
	require.Len(t, regexp.MustCompile(`PE 1 \(pid \d+\) exited with status 3`).FindAllString(r.stderr, -1), 1, r.stderr)
	require.NotContains(t, r.stderr, "finalized")
}
