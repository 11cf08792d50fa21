package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/examples/internal/exampletest"
)

// The PEs end up holding every key drawn, each PE the keys of its range:
// the printed count, checksum and keys per PE are those computed here.
func TestIsort(t *testing.T) {
	oshrun, isort := exampletest.Build(t, "github.com/goshmem/goshmem/examples/isort")
	const perPE, maxKey = 20000, 1000
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprintf("%dPEs", np), func(t *testing.T) {
			var total int64
			heldBy := make([]int64, np)
			for pe := range np {
				for _, k := range draw(pe, perPE, maxKey) {
					total += k
					heldBy[k*int64(np)/maxKey]++
				}
			}
			want := fmt.Sprintf("isort: %d PEs, %d keys below %d over loopback: sorted and verified, checksum %d, keys per PE %s (",
				np, np*perPE, maxKey, total, join(heldBy))

			cmd := exec.Command(oshrun, "-np", strconv.Itoa(np), isort, "-keys", strconv.Itoa(perPE), "-max", strconv.Itoa(maxKey))
			cmd.Env = append(cmd.Environ(), "GOSHMEM_SHM_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), want)
			require.Len(t, regexp.MustCompile(`(?m)^isort:`).FindAllString(string(out), -1), 1, "one line, from PE 0:\n%s", out)
		})
	}
}

func TestByBucket(t *testing.T) {
	keys := draw(7, 1000, 100)
	grouped, count := byBucket(keys, 3, 100)
	require.Equal(t, int64(len(keys)), count[0]+count[1]+count[2])
	require.ElementsMatch(t, keys, grouped)
	at := 0
	for pe, c := range count {
		for _, k := range grouped[at : at+int(c)] {
			require.Equal(t, int64(pe), k*3/100, "key %d in the bucket of PE %d", k, pe)
		}
		at += int(c)
	}
	require.False(t, slices.Equal(keys, draw(8, 1000, 100)), "PEs draw different keys")
}

func TestIsortBadFlags(t *testing.T) {
	_, isort := exampletest.Build(t, "github.com/goshmem/goshmem/examples/isort")
	for _, args := range [][]string{{"-keys", "0"}, {"-max", "0"}, {"-max", "1099511627777"}} {
		out, err := exec.Command(isort, args...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v: %s", args, out)
		require.Equal(t, 2, ee.ExitCode(), "%v: %s", args, out)
		require.Contains(t, string(out), args[0])
	}
}
