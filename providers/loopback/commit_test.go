package loopback

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// allocated is how much of its file system this PE's file of a reserved
// region takes.
func allocated(p *peT, r core.Region) int64 {
	p.Helper()
	n, err := r.(*region).backing.Allocated()
	require.NoError(p, err)
	return n
}

// requireAbout checks that got is want, give or take the few blocks a
// file system keeps for its own bookkeeping of a file's extents.
func requireAbout(p *peT, want, got int64, what string) {
	p.Helper()
	require.True(p, got >= want && got < want+64<<10, "%s: %d bytes allocated, want %d", what, got, want)
}

// A reserved region takes nothing of the file system until its owner
// commits ranges of it, a commit takes those pages only and costs
// nothing the second time, and the region is a region throughout: peers
// put into it and read it back.
func TestReservedRegionCommitsOnDemand(t *testing.T) {
	t.Parallel()
	const size = 16 << 20
	page := int64(os.Getpagesize())
	j := newJob(t, 2)
	j.run(func(p *peT) {
		r, err := p.dom.NewReservedRegion(size)
		require.NoError(p, err)
		require.Len(p, r.Local(), size)
		require.Zero(p, allocated(p, r), "reserved, nothing committed")

		require.NoError(p, p.dom.Commit(r, 1<<20+100, 10))
		requireAbout(p, page, allocated(p, r), "ten bytes")
		require.NoError(p, p.dom.Commit(r, 1<<20, int(page)))
		requireAbout(p, page, allocated(p, r), "the same page again")
		require.NoError(p, p.dom.Commit(r, 0, 4<<20))
		requireAbout(p, 4<<20, allocated(p, r), "the first 4 MiB")
		p.barrier()

		ep, err := p.dom.NewEndpoint(core.EndpointOptions{})
		require.NoError(p, err)
		other := 1 - p.rank
		require.NoError(p, ep.Put(other, r, 3<<20, pattern(p.rank, 4096)))
		require.NoError(p, ep.Quiet())
		p.barrier()
		require.Equal(p, pattern(other, 4096), r.Local()[3<<20:3<<20+4096], "a peer's put into committed memory")
		requireAbout(p, 4<<20, allocated(p, r), "after the puts")

		var be *core.BoundsError
		require.ErrorAs(p, p.dom.Commit(r, size-10, 11), &be)
		require.ErrorIs(p, p.dom.Commit(r, -1, 2), core.ErrOutOfBounds)
		require.NoError(p, p.dom.Commit(r, size, 0), "nothing, at the end")

		whole, err := p.dom.NewRegion(1 << 20)
		require.NoError(p, err)
		require.NoError(p, p.dom.Commit(whole, 0, 1<<20), "a region from NewRegion is committed already")
		require.ErrorIs(p, p.dom.Commit(struct{ core.Region }{r}, 0, 1), core.ErrInvalid)

		empty, err := p.dom.NewReservedRegion(0)
		require.NoError(p, err)
		require.Empty(p, empty.Local())
		require.NoError(p, p.dom.Commit(empty, 0, 0))
		require.Empty(p, dirEntries(p, p.job.dir()), "no file stays in the job directory")
		p.barrier()
	})
}

func TestCommitAfterClose(t *testing.T) {
	t.Parallel()
	j := newJob(t, 1)
	var r core.Region
	var d *domain
	j.run(func(p *peT) {
		var err error
		r, err = p.dom.NewReservedRegion(1 << 20)
		require.NoError(p, err)
		d = p.dom
	})
	require.ErrorIs(t, d.Commit(r, 0, 4096), core.ErrClosed)
}

// mountTmpfs mounts a tmpfs of size bytes for the test alone, or skips
// the test where this process may not mount one.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+itoa(size)+",mode=0700"); err != nil {
		t.Skipf("a full file system needs a small tmpfs of its own, and this process may not mount one: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(dir, syscall.MNT_DETACH)) })
	return dir
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// fill takes all but keep bytes of the free space of dir's file system
// with a file of its own, which the test removes to make room again.
func fill(t require.TestingT, dir string, keep int64) string {
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	free := int64(st.Bavail)*st.Bsize - keep
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	if free > 0 {
		require.NoError(t, syscall.Fallocate(int(f.Fd()), 0, 0, free))
	}
	return path
}

// A reserved region that the file system could not hold for every PE is
// refused at once, on every PE and naming where; one that fits is made
// without taking its room, and when the file system fills up afterwards
// a commit fails with ErrNoMemory, naming the file system, and succeeds
// once there is room again. Nothing faults.
func TestReservedRegionOnAFullFileSystem(t *testing.T) {
	t.Parallel()
	shm := mountTmpfs(t, 16<<20)
	j := newJob(t, 2)
	j.shm = shm
	j.run(func(p *peT) {
		_, err := p.dom.NewReservedRegion(12 << 20)
		require.ErrorIs(p, err, core.ErrNoMemory, "2 x 12 MiB in 16 MiB")
		require.ErrorContains(p, err, "needs 24M of "+shm)
		require.ErrorContains(p, err, core.EnvShmDir)

		r, err := p.dom.NewReservedRegion(4 << 20)
		require.NoError(p, err, "2 x 4 MiB in 16 MiB")
		require.NoError(p, p.dom.Commit(r, 0, 1<<20))
		p.barrier()
		var filler string
		if p.rank == 0 {
			filler = fill(p, shm, 0)
		}
		p.barrier()
		err = p.dom.Commit(r, 1<<20, 2<<20)
		require.ErrorIs(p, err, core.ErrNoMemory)
		require.ErrorIs(p, err, syscall.ENOSPC)
		require.ErrorContains(p, err, "the file system of "+shm+" is full")
		r.Local()[0] = 1 // committed before: still there
		p.barrier()
		if p.rank == 0 {
			require.NoError(p, os.Remove(filler))
		}
		p.barrier()
		require.NoError(p, p.dom.Commit(r, 1<<20, 2<<20))
		r.Local()[2<<20] = 1
		p.barrier()
	})
}
