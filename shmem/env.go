package shmem

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// The spec's environment variables.
const (
	EnvSymmetricSize = "SHMEM_SYMMETRIC_SIZE"
	EnvInfo          = "SHMEM_INFO"
	EnvDebug         = "SHMEM_DEBUG"
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

// EnvVars lists the variables shmem itself reads, for provinfo -e and the
// README.
func EnvVars() []core.Param {
	return append([]core.Param{
		{Name: "SYMMETRIC_SIZE", Env: EnvSymmetricSize, Default: core.FormatSize(DefaultHeapSize),
			Help: "size of each PE's symmetric heap: bytes, or a number with K, M, G or T (512M, 2G)"},
		{Name: "INFO", Env: EnvInfo, Default: "0", Help: "if true, PE 0 prints version, provider, parameters and heap size at init"},
		{Name: "DEBUG", Env: EnvDebug, Default: "0", Help: "if true, debug messages go to standard error"},
		{Name: "VERSION", Env: EnvVersion, Default: "0", Help: "if true, PE 0 prints the library version and build (module version, commit, Go version) at init"},
		{Name: "WAIT_REPORT", Env: EnvWaitReport, Default: DefaultWaitReport.String(),
			Help: "a wait that lasts this long (a Go duration; 0 turns it off) prints, once, where it waits and what the PEs it waits for are doing, and waits on"},
		{Name: "PROVIDER", Env: core.EnvProvider, Default: "(automatic)",
			Help: "provider name, preference list (loopback,tcp) or exclusions (^tcp, ^loopback,^tcp); unset picks by locality"},
	}, bootstrap.EnvVars()...)
}

// envBool reads a boolean variable the way the spec's implementations do:
// unset, empty, 0, false, no and off are false; 1, true, yes, on and y are true.
func envBool(lookup func(string) (string, bool), name string) (bool, error) {
	v, ok := lookup(name)
	if !ok {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off", "n":
		return false, nil
	case "1", "true", "yes", "on", "y":
		return true, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n != 0, nil
	}
	return false, &core.EnvError{Var: name, Value: v, Allowed: "1, true, yes, on, or 0, false, no, off"}
}

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
