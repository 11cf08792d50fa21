package shmem

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// 100 PEs of the default heap on a host with 22 GiB available, as on the
// host where the out-of-memory killer took other programs with the job:
// refused, naming the size, the PEs, the variable and what would fit.
func TestCheckHostMemory(t *testing.T) {
	region := internalSize + DefaultHeapSize + exitSize(100)
	avail := int64(22) << 30
	err := checkHostMemory(DefaultHeapSize, region, 100, avail, true)
	require.ErrorIs(t, err, core.ErrNoMemory)
	require.ErrorContains(t, err, "SHMEM_SYMMETRIC_SIZE=256M for 100 PEs on this host needs")
	require.ErrorContains(t, err, "7/8 of the 22.0 GiB it has available")
	require.Regexp(t, `set SHMEM_SYMMETRIC_SIZE to at most \d+M or run fewer PEs on this host`, err.Error())

	require.NoError(t, checkHostMemory(DefaultHeapSize, region, 8, avail, true), "8 PEs fit")
	require.NoError(t, checkHostMemory(DefaultHeapSize, region, 1000, 0, false), "unknown memory is no reason to refuse")

	err = checkHostMemory(DefaultHeapSize, region, 4, 4*int64(region-DefaultHeapSize), true)
	require.ErrorIs(t, err, core.ErrNoMemory)
	require.ErrorContains(t, err, "; run fewer PEs on this host", "no heap is small enough")
	require.NotContains(t, err.Error(), "at most")

	// The size suggested fits, and a MiB more does not.
	err = checkHostMemory(DefaultHeapSize, region, 100, avail, true)
	m := regexp.MustCompile(`at most (\d+M)`).FindStringSubmatch(err.Error())
	require.Len(t, m, 2)
	most, err := core.ParseSize(m[1])
	require.NoError(t, err)
	over := region - DefaultHeapSize
	require.NoError(t, checkHostMemory(int(most), int(most)+over, 100, avail, true))
	require.Error(t, checkHostMemory(int(most)+1<<20, int(most)+1<<20+over, 100, avail, true))
}
