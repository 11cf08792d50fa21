package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
)

// hostMemory is the memory a job's heaps on a host may take: what the
// host says it has available, less an eighth left to everything else.
// A heap is committed whole when it is made where the provider cannot
// reserve it, and a reserved heap (loopback's) is committed as blocks
// are handed out, up to all of it for a program that allocates it all;
// so a job that asks for more than this is refused before any PE makes
// its heap: together the heaps could push the host into its
// out-of-memory killer, which takes other programs down with the job.
func hostMemory(avail int64) int64 { return avail - avail/8 }

// checkHostMemory refuses heaps of region bytes each (heapSize of them
// the program's) for pes PEs on this host when avail bytes of memory,
// ok if known, cannot hold them all, in the user's terms: the size, the
// PE count and SHMEM_SYMMETRIC_SIZE.
func checkHostMemory(heapSize, region, pes int, avail int64, ok bool) error {
	if !ok {
		return nil // the host does not say: the provider's own errors stand
	}
	need := int64(region) * int64(pes)
	if room := hostMemory(avail); need > room {
		most := room/int64(pes) - int64(region-heapSize)
		hint := "run fewer PEs on this host"
		if most >= MinHeapSize {
			hint = fmt.Sprintf("set %s to at most %s or %s", EnvSymmetricSize, roundDownSize(most), hint)
		}
		return fmt.Errorf("%s=%s for %d PEs on this host needs %s of memory (%d bytes per PE with shmem's own %d), "+
			"more than the %s this host can spare (7/8 of the %s it has available); %s: %w",
			EnvSymmetricSize, core.FormatSize(int64(heapSize)), pes, approxSize(need), region, region-heapSize,
			approxSize(room), approxSize(avail), hint, core.ErrNoMemory)
	}
	return nil
}

// roundDownSize prints n rounded down to a whole MiB (KiB below one).
func roundDownSize(n int64) string {
	if n >= 1<<20 {
		return core.FormatSize(n &^ (1<<20 - 1))
	}
	return core.FormatSize(n &^ (1<<10 - 1))
}

// approxSize prints n in GiB or MiB with one decimal, for sizes nobody
// needs to the byte.
func approxSize(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
