package shmem_test

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/shmem"
)

// heapBlocks is how much of its file system this PE's heap takes
// (sys.MappedBlocks). It skips the test where that is not to be seen.
func heapBlocks(t require.TestingT, skip func(string, ...any), w *shmem.World) int64 {
	n, err := sys.MappedBlocks(w.HeapBase())
	if errors.Is(err, sys.ErrMappingHidden) {
		skip("%v", err)
		return 0
	}
	require.NoError(t, err)
	return n
}

// A job's heap takes of the shared-memory file system what shmem itself
// uses (its collectives' area, committed at start) and what the program
// allocates, a granule at a time, not SHMEM_SYMMETRIC_SIZE per PE: 40
// PEs of a program that allocates a word took 10.1 GiB of /dev/shm when
// every heap was committed whole. Blocks handed out again cost nothing.
func TestHeapCommittedAsHandedOut(t *testing.T) {
	const heap = 64 << 20
	const slack = 64 << 10 // a file system's own blocks for the file's extents
	own := int64(shmem.InternalSize)
	skipped := false
	world(t, 2, nil, func(int) []shmem.Option { return []shmem.Option{shmem.WithHeapSize(heap)} },
		func(pe int, w *shmem.World, err error) {
			require.NoError(t, err)
			skip := func(format string, args ...any) { skipped = true; t.Logf(format, args...) }
			within := func(lo, hi int64, what string) {
				got := heapBlocks(t, skip, w)
				require.True(t, skipped || got >= lo && got <= hi+slack,
					"PE %d, %s: the heap takes %d bytes, want %d to %d", pe, what, got, lo, hi)
			}
			within(own, own+int64(os.Getpagesize()), "after init")

			const big = 10 << 20
			b, err := shmem.Malloc[byte](w, big)
			require.NoError(t, err)
			within(own+big, own+big+2*shmem.CommitGranule, "a block of 10 MiB")
			b[big-1] = 1
			require.NoError(t, shmem.Free(w, b))
			b, err = shmem.Malloc[byte](w, big)
			require.NoError(t, err)
			within(own+big, own+big+2*shmem.CommitGranule, "the block freed and handed out again")
			for range 100 {
				_, err := shmem.Malloc[int64](w, 1)
				require.NoError(t, err)
			}
			within(own+big, own+big+2*shmem.CommitGranule, "and a hundred words after it")
			require.NoError(t, shmem.Free(w, b))
		})
	if skipped {
		t.Skip("the heap's file is not to be seen through /proc/self/map_files")
	}
}

// A block whose memory one PE cannot commit (its /dev/shm is full) fails
// on every PE alike, as an *AllocError naming SHMEM_SYMMETRIC_SIZE, the
// directory and the PE, which C's shmem_malloc turns into NULL; nothing
// faults, the block is not lost, and the next malloc works once there is
// room again. Realloc keeps the old block.
func TestMallocThatCannotBeCommitted(t *testing.T) {
	const n = 3
	var full atomic.Bool
	hook := func(pe int) func(off, n int) error {
		return func(off, size int) error {
			if pe == 1 && full.Load() {
				return &os.PathError{Op: "fallocate", Path: "/dev/shm/heap", Err: syscall.ENOSPC}
			}
			return nil
		}
	}
	// No GOSHMEM_SHM_DIR: the job's files are in /dev/shm, as a user's.
	lookup := func(string) (string, bool) { return "", false }
	id := jobID()
	done := make(chan struct{}, n)
	for pe, b := range bootstrap.NewLocal(n) {
		go func() {
			defer func() { done <- struct{}{} }()
			w, err := shmem.Init(shmem.WithBootstrap(b, id), shmem.WithEnv(lookup), shmem.WithHeapSize(16<<20),
				shmem.WithCommitHook(hook(pe)))
			if !assertNoError(t, err) {
				b.Kill()
				return
			}
			defer func() { require.NoError(t, w.Finalize()) }()
			small, err := shmem.Malloc[int64](w, 8)
			require.NoError(t, err)
			small[7] = int64(pe)
			require.NoError(t, w.BarrierAll())
			if pe == 0 {
				full.Store(true)
			}
			require.NoError(t, w.BarrierAll())

			for _, alloc := range []func() ([]byte, error){
				func() ([]byte, error) { return shmem.Malloc[byte](w, 6<<20) },
				func() ([]byte, error) { return shmem.Calloc[byte](w, 6<<20) },
				func() ([]byte, error) { return shmem.Align[byte](w, 1<<20, 6<<20) },
			} {
				got, err := alloc()
				require.Zero(t, len(got), "PE %d: no block", pe)
				var ae *shmem.AllocError
				require.ErrorAs(t, err, &ae, "PE %d", pe)
				require.ErrorIs(t, err, core.ErrNoMemory)
				require.True(t, ae.Uncommitted)
				require.Equal(t, 1, ae.PE)
				require.ErrorContains(t, err, shmem.EnvSymmetricSize+"=16M")
				require.ErrorContains(t, err, "PE 1 could not commit its memory in /dev/shm")
				require.ErrorContains(t, err, core.EnvShmDir)
				if pe == 1 {
					require.ErrorIs(t, err, syscall.ENOSPC, "the failing PE says why")
				} else {
					require.NotErrorIs(t, err, syscall.ENOSPC)
				}
			}
			grown, err := shmem.Realloc(w, small, 2<<20)
			require.Zero(t, len(grown), "PE %d: no block", pe)
			require.ErrorIs(t, err, core.ErrNoMemory)
			require.Equal(t, int64(pe), small[7], "the old block stays")

			require.NoError(t, w.BarrierAll())
			if pe == 0 {
				full.Store(false)
			}
			require.NoError(t, w.BarrierAll())
			b, err := shmem.Malloc[byte](w, 6<<20)
			require.NoError(t, err, "room again")
			b[len(b)-1] = 1
			off, err := w.HeapOffset(mem.Addr(b), 1)
			require.NoError(t, err)
			require.Equal(t, shmem.InternalSize+64, off, "the first free block, right after the small one: the failed ones were given back")
			require.NoError(t, shmem.Free(w, b))
			require.NoError(t, shmem.Free(w, small))
		}()
	}
	for range n {
		<-done
	}
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
