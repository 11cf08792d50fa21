package shmem_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"

	_ "github.com/goshmem/goshmem/providers/loopback"
)

func jobID() string { return "shmemtest-" + rand.Text()[:12] }

// shmLookup is a PE's environment: env, with the job's shared-memory
// files in dir.
func shmLookup(dir string, env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return dir, true
		}
		v, ok := env[k]
		return v, ok
	}
}

// world runs n PEs as goroutines; each gets env (merged over a private
// shared-memory directory) and its own options, and calls f.
func world(t testing.TB, n int, env map[string]string, perPE func(pe int) []shmem.Option, f func(pe int, w *shmem.World, err error)) {
	t.Helper()
	lookup := shmLookup(t.TempDir(), env)
	id := jobID()
	var wg sync.WaitGroup
	for pe, b := range bootstrap.NewLocal(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := []shmem.Option{shmem.WithBootstrap(b, id), shmem.WithEnv(lookup), shmem.WithHeapSize(1 << 20)}
			if perPE != nil {
				opts = append(opts, perPE(pe)...)
			}
			w, err := shmem.Init(opts...)
			f(pe, w, err)
			if w != nil {
				require.NoError(t, w.Finalize())
			}
		}()
	}
	wg.Wait()
}

func TestInitAndFinalize(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	world(t, 3, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		require.Equal(t, pe, w.MyPE())
		require.Equal(t, 3, w.NPEs())
		require.Equal(t, "loopback", w.Provider())
		require.Equal(t, 1<<20, w.HeapSize())
		require.NoError(t, w.Finalize())
		require.NoError(t, w.Finalize(), "Finalize is idempotent")
		require.ErrorIs(t, w.BarrierAll(), shmem.ErrClosed)
		_, err = shmem.Malloc[int](w, 1)
		require.ErrorIs(t, err, shmem.ErrClosed)
	})
}

func TestInitSingletonWithoutLauncher(t *testing.T) {
	t.Setenv(core.EnvShmDir, t.TempDir())
	for _, k := range []string{"GOSHMEM_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"} {
		t.Setenv(k, "")
	}
	w, err := shmem.Init(shmem.WithHeapSize(64 << 10))
	require.NoError(t, err)
	require.Equal(t, 0, w.MyPE())
	require.Equal(t, 1, w.NPEs())
	x, err := shmem.Malloc[int64](w, 4)
	require.NoError(t, err)
	require.NoError(t, shmem.P(w, &x[0], 42, 0))
	require.Equal(t, int64(42), x[0])
	require.NoError(t, w.BarrierAll())
	require.NoError(t, w.Finalize())
}

func TestInitBadEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{shmem.EnvSymmetricSize: "12Q"}, []string{"SHMEM_SYMMETRIC_SIZE", "512M", "2G"}},
		{map[string]string{shmem.EnvSymmetricSize: "1"}, []string{"SHMEM_SYMMETRIC_SIZE", "from 4K"}},
		{map[string]string{core.EnvProvider: "bogus"}, []string{`"bogus"`, "loopback"}},
		{map[string]string{shmem.EnvDebug: "maybe"}, []string{"SHMEM_DEBUG"}},
	} {
		t.Run(fmt.Sprint(tc.env), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			world(t, 2, tc.env, func(int) []shmem.Option { return []shmem.Option{shmem.WithHeapSize(0)} },
				func(pe int, w *shmem.World, err error) {
					require.Nil(t, w)
					require.ErrorIs(t, err, shmem.ErrInvalid)
					for _, s := range tc.want {
						require.ErrorContains(t, err, s)
					}
				})
		})
	}
}

// A PE with another heap size than the others is an error on every PE,
// never silent corruption.
func TestInitHeapSizeMismatch(t *testing.T) {
	world(t, 3, nil, func(pe int) []shmem.Option {
		if pe == 2 {
			return []shmem.Option{shmem.WithHeapSize(2 << 20)}
		}
		return nil
	}, func(pe int, w *shmem.World, err error) {
		require.Nil(t, w)
		require.ErrorIs(t, err, shmem.ErrInvalid)
		require.ErrorContains(t, err, "SHMEM_SYMMETRIC_SIZE differs between PEs")
	})
}

// Several hosts rule out loopback: by default there is no provider left,
// and naming loopback says why.
func TestInitLocality(t *testing.T) {
	world(t, 2, nil, func(pe int) []shmem.Option {
		return []shmem.Option{shmem.WithHostID(fmt.Sprint("host", pe))}
	}, func(pe int, w *shmem.World, err error) {
		require.Nil(t, w)
		require.ErrorIs(t, err, shmem.ErrNotSupported)
	})
	world(t, 2, map[string]string{core.EnvProvider: "loopback"}, func(pe int) []shmem.Option {
		return []shmem.Option{shmem.WithHostID(fmt.Sprint("host", pe))}
	}, func(pe int, w *shmem.World, err error) {
		require.Nil(t, w)
		require.ErrorContains(t, err, "serves PEs on one host, but the job spans 2 hosts")
	})
}

// A lost PE turns a wait into an error instead of a hang.
func TestLostPeerEndsWait(t *testing.T) {
	lookup := shmLookup(t.TempDir(), nil)
	boots := bootstrap.NewLocal(2)
	id := jobID()
	var wg sync.WaitGroup
	for pe, b := range boots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := shmem.Init(shmem.WithBootstrap(b, id), shmem.WithEnv(lookup), shmem.WithHeapSize(1<<20))
			if err != nil {
				t.Error(err)
				return
			}
			flag, err := shmem.Malloc[int64](w, 1)
			require.NoError(t, err)
			if pe == 1 {
				b.Kill() // dies without finalizing
				return
			}
			err = shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, 1)
			require.ErrorIs(t, err, shmem.ErrPeerLost)
			require.ErrorContains(t, err, "PE 1 lost")
			w.Finalize()
		}()
	}
	wg.Wait()
}

// Only the user part of the heap is addressable: not the internal area
// before it, nor the job-control words after it.
func TestHeapEdges(t *testing.T) {
	world(t, 1, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		base, size := w.HeapBase(), w.HeapSize()
		off, err := w.HeapOffset(base, size)
		require.NoError(t, err, "the whole user heap")
		_, err = w.HeapOffset(base+uintptr(size), 8)
		var ae *shmem.AddrError
		require.ErrorAs(t, err, &ae, "the word just past the heap")
		_, err = w.HeapOffset(base+uintptr(size)-4, 8)
		require.ErrorAs(t, err, &ae, "a word straddling the end")
		_, err = w.HeapOffset(base-8, 8)
		require.ErrorAs(t, err, &ae, "the internal area")
		_, err = w.HeapOffset(base+uintptr(size), 0)
		require.NoError(t, err, "an empty buffer at the end")
		require.Positive(t, off)
	})
}

// Free and Realloc of memory that is not in the heap say what was given
// and what they take: an address, not "0 bytes" of a buffer.
func TestFreeOutsideTheHeap(t *testing.T) {
	world(t, 2, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		local := make([]int64, 4)
		for _, err := range []error{shmem.Free(w, local), func() error { _, err := shmem.Realloc(w, local, 8); return err }()} {
			var ae *shmem.AddrError
			require.ErrorAs(t, err, &ae)
			require.ErrorIs(t, err, shmem.ErrOutOfBounds)
			require.NotContains(t, err.Error(), "0 bytes")
			require.Regexp(t, fmt.Sprintf(`^shmem: (free|realloc): %#x is not a block of the symmetric heap: it lies outside the heap \[0x[0-9a-f]+, 0x[0-9a-f]+\); `+
				`(free|realloc) takes only what Malloc, Calloc, Align or Realloc returned`, mem.Addr(local)), err.Error())
		}
		// Every PE is still in step: the refused calls took no part of a
		// collective.
		require.NoError(t, w.BarrierAll())
	})
}

// A job whose heaps this host cannot hold together is refused on every
// PE before any makes its heap, in the user's terms, instead of running
// the host into its out-of-memory killer. The heap size is chosen from
// what the host has available, so that no PE ever allocates it.
func TestInitRefusesHeapsTheHostCannotHold(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	avail, ok := core.MemAvailable()
	if !ok {
		t.Skip("the host does not say how much memory it has available")
	}
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(os.TempDir(), &st))
	shmFree := int64(st.Bavail) * st.Bsize
	// Each PE's heap fits alone, in memory and in the file system of its
	// file, while the 3 PEs' heaps together are past all the memory.
	heap := min(avail/2, shmFree-shmFree/8) &^ (1<<20 - 1)
	if heap < 64<<20 || 3*heap < avail+avail/8 {
		t.Skip("the host's memory and file system do not allow a heap that fits alone but not thrice")
	}
	size := core.FormatSize(heap)
	world(t, 3, nil, func(int) []shmem.Option { return []shmem.Option{shmem.WithHeapSize(heap)} },
		func(pe int, w *shmem.World, err error) {
			require.Nil(t, w)
			require.ErrorIs(t, err, shmem.ErrNoMemory)
			require.ErrorContains(t, err, shmem.EnvSymmetricSize+"="+size+" for 3 PEs on this host needs")
		})
}
