package shmem

import (
	"fmt"
	"github.com/goshmem/goshmem/core"
)

// The spec's environment variables.
const (
	EnvSymmetricSize = "SHMEM_SYMMETRIC_SIZE"
	EnvInfo          = "SHMEM_INFO"
	EnvDebug         = core.EnvDebug
	EnvVersion       = "SHMEM_VERSION"
)

// DefaultHeapSize is the symmetric heap size when SHMEM_SYMMETRIC_SIZE is
// unset. Where the provider reserves heaps (core.Committer: loopback),
// a heap takes memory only as Malloc hands its blocks out.
const DefaultHeapSize = 256 << 20

// MinHeapSize and MaxHeapSize bound SHMEM_SYMMETRIC_SIZE.
const (
	MinHeapSize = 4 << 10
	MaxHeapSize = 1 << 40
)

// shmem's variables, in the registry (core.Declare); SHMEM_DEBUG is
// core's, which the bootstrap and the C library read too.
var (
	symmetricSizeParam = core.Declare(core.Param{Env: EnvSymmetricSize, Kind: core.KindSize, Default: core.FormatSize(DefaultHeapSize),
		Help: "symmetric heap per PE: bytes or 512M, 2G, 64KiB (binary units); over loopback it is reserved, and /dev/shm gives each PE about 5 MiB at start and then what shmem_malloc hands out, 2 MiB at a time; a block /dev/shm has no room for is NULL on every PE"})[0]
	infoParam = core.Declare(core.Param{Env: EnvInfo, Kind: core.KindBool, Default: "0",
		Help: "PE 0 prints version, provider, launcher, transports and every variable (secrets as set or unset) at init"})[0]
	versionParam = core.Declare(core.Param{Env: EnvVersion, Kind: core.KindBool, Default: "0",
		Help: "PE 0 prints the library version and build (module version, commit, Go version) at init"})[0]
	waitReportParam = core.Declare(core.Param{Env: EnvWaitReport, Kind: core.KindDuration, Default: DefaultWaitReport.String(),
		Help: "a wait (a collective, wait_until, a lock) that lasts this long prints, once, which routine it waits in and what the PEs it waits for are doing, and waits on (docs/collectives.md); 0 turns it off"})[0]
)

// checkHeapSize refuses, in SHMEM_SYMMETRIC_SIZE's terms, a heap larger
// than the provider's regions can be: its own error would name only the
// size of the region, internal areas included, that shmem asked for.
func checkHeapSize(info core.Info, heapSize, tail int) error {
	max := info.MaxRegionSize - internalSize - tail
	if info.MaxRegionSize == 0 || heapSize <= max {
		return nil
	}
	if max >= 1<<20 {
		max &^= 1<<20 - 1 // a limit to read, not to the byte
	}
	return &core.EnvError{Var: EnvSymmetricSize, Value: core.FormatSize(int64(heapSize)),
		Allowed: fmt.Sprintf("a size from %s to %s with provider %s (its regions hold at most %d bytes, %d of which shmem keeps for itself)",
			core.FormatSize(MinHeapSize), core.FormatSize(int64(max)), info.Name, info.MaxRegionSize, internalSize+tail)}
}

// heapError says which setting the heap a provider could not make came
// from: memory runs out, or a job directory is full, for the size asked.
func heapError(provider string, heapSize, tail int, err error) error {
	return fmt.Errorf("symmetric heap of %s=%s (%d bytes per PE with shmem's own %d) on provider %s: %w",
		EnvSymmetricSize, core.FormatSize(int64(heapSize)), heapSize+internalSize+tail, internalSize+tail, provider, err)
}
