package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func init() { extraRoles["hello"] = helloPE }

// helloPE is examples/hello: the default heap, one word of it, a put to
// the right neighbour and a barrier.
func helloPE(rank int, _ []string) int {
	w, err := shmem.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 90
	}
	from, err := shmem.Malloc[int64](w, 1)
	if err == nil {
		err = shmem.P(w, &from[0], int64(rank), (rank+1)%w.NPEs())
	}
	if err == nil {
		err = w.BarrierAll()
	}
	if want := int64((rank + w.NPEs() - 1) % w.NPEs()); err == nil && from[0] != want {
		err = fmt.Errorf("PE %d: left neighbour said %d, want %d", rank, from[0], want)
	}
	if err == nil {
		err = w.Finalize()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 91
	}
	fmt.Printf("hello ok %d\n", rank)
	return 0
}

// A job takes of the shared-memory file system what it uses, not its
// PEs' whole heaps: `oshrun -np 40 hello` with the default 256 MiB heap
// took 10.1 GiB of /dev/shm at once when every heap was committed at
// start; now each PE commits shmem's own area (about 5 MiB) and the
// granule of its one word. The file system is a tmpfs of the test's own,
// large enough for the whole heaps, so that the job runs either way and
// its use is measured alone, sampled every 10 ms while it runs.
func TestJobTakesOfShmWhatItUses(t *testing.T) {
	if testing.Short() {
		t.Skip("40 PEs; not in -short")
	}
	const np = 40
	const heap = shmem.DefaultHeapSize
	const limit = 1 << 30
	need := int64(np) * (heap + 8<<20)
	if avail, ok := core.MemAvailable(); !ok || avail-avail/8 < need {
		t.Skipf("the host cannot spare the %s the job's heaps reserve (shmem refuses a job whose heaps could not all be committed)",
			core.FormatSize(need))
	}
	shm := t.TempDir()
	if err := syscall.Mount("tmpfs", shm, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", need+need/4)); err != nil {
		t.Skipf("measuring a job's use of a file system alone needs a tmpfs of the test's own, and this process may not mount one: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(shm, syscall.MNT_DETACH)) })
	t.Setenv(core.EnvShmDir, shm)
	t.Setenv(peEnv, "hello")
	if _, ok := os.LookupEnv(shmem.EnvSymmetricSize); ok {
		t.Setenv(shmem.EnvSymmetricSize, core.FormatSize(heap))
	}

	used := func() int64 {
		var st syscall.Statfs_t
		if syscall.Statfs(shm, &st) != nil {
			return 0
		}
		return int64(st.Blocks-st.Bfree) * st.Bsize
	}
	var peak atomic.Int64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), used()))
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	code, stdout, stderr := runOshrun(t, "-np", fmt.Sprint(np), "-provider", "loopback", os.Args[0])
	close(done)
	<-sampled
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	for pe := range np {
		require.Contains(t, stdout, fmt.Sprintf("hello ok %d\n", pe))
	}
	t.Logf("%d PEs of hello over loopback, %s heaps: the job took at most %s of its file system (%s a PE) in %v",
		np, core.FormatSize(heap), approx(peak.Load()), approx(peak.Load()/np), time.Since(start).Round(time.Millisecond))
	require.Less(t, peak.Load(), int64(limit), "the job's peak use of its file system")
}

func approx(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
