//go:build linux

package sys

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// CreateShared creates the file at path (mode 0600, failing if it exists),
// sizes it to size bytes and maps it shared, readable and writable, at an
// address aligned to Alignment(size). The memory reads as zeros.
//
// The file's blocks are allocated now (fallocate) where the file system
// supports it: on a full tmpfs the failure is an error here rather than a
// SIGBUS at the first store into a page nobody could back.
func CreateShared(path string, size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("sys: create %s: size %d is not positive", path, size)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	b, err := mapFile(f, size, true)
	if err != nil {
		// The name is ours only if the mapping is returned.
		err = errors.Join(err, os.Remove(path))
	}
	return b, err
}

// OpenShared maps the existing file at path, which must be exactly size
// bytes long, shared, readable and writable, at an address aligned to
// Alignment(size), whatever the address of other mappings of the file.
// Requiring the exact size means a truncated or foreign file is an error
// here, not a SIGBUS later.
func OpenShared(path string, size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("sys: open %s: size %d is not positive", path, size)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return mapFile(f, size, false)
}

// ReserveShared is CreateShared without the allocation: the file is
// sized and mapped, but its blocks are allocated only as the returned
// Backing's Commit asks (or, where the file system cannot allocate
// ahead, at the first store into each page). A heap of hundreds of MiB
// then costs the file system only what is committed. A store into a page
// nobody committed still works while the file system has room, and
// faults the process (SIGBUS) when it has none: commit before use.
//
// The Backing keeps the file open for Commit; the caller closes it once
// it commits no more (the mapping does not need it). The file's name
// belongs to the caller, as with CreateShared; if ReserveShared fails it
// removes the file itself and there is nothing to close.
func ReserveShared(path string, size int) ([]byte, *Backing, error) {
	if size <= 0 {
		return nil, nil, fmt.Errorf("sys: reserve %s: size %d is not positive", path, size)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, err
	}
	b, err := sizeAndMap(f, size, false)
	if err != nil {
		return nil, nil, errors.Join(err, f.Close(), os.Remove(path))
	}
	return b, &Backing{f: f, size: int64(size)}, nil
}

// Backing is the open file under a mapping from ReserveShared, whose
// blocks Commit allocates.
type Backing struct {
	f    *os.File
	size int64
}

// commitChunk is how much of a range Commit allocates with one call.
// tmpfs gives up a call that a signal interrupts (EINTR) and undoes what
// it allocated in it; in chunks, a retry repeats one chunk, not the
// whole range, so a process that takes signals often (a profiler's, at
// 100 Hz) still gets through hundreds of MiB.
const commitChunk = 8 << 20

// Commit allocates the file's blocks under bytes [off, off+n), widened
// to whole pages and cut at the end of the file, so that stores there
// never fault for want of space. Blocks allocated already cost nothing
// but the call. Where the file system cannot allocate ahead (no
// fallocate), it does nothing and pages are allocated at the first store,
// as they were before. On error (ENOSPC: the file system is full) what
// the failed call would have allocated is not, though blocks an earlier
// chunk of the range got may stay allocated.
func (b *Backing) Commit(off, n int) error {
	if off < 0 || n < 0 || int64(off) > b.size-int64(n) {
		return fmt.Errorf("sys: commit %d bytes at %d of %s: the file is %d bytes long", n, off, b.f.Name(), b.size)
	}
	page := int64(os.Getpagesize())
	lo := int64(off) &^ (page - 1)
	hi := min((int64(off)+int64(n)+page-1)&^(page-1), b.size)
	rc, err := b.f.SyscallConn()
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: b.f.Name(), Err: err}
	}
	for lo < hi {
		end := min(lo+commitChunk, hi)
		var ferr error
		// Control keeps the descriptor from being closed under the call.
		err := rc.Control(func(fd uintptr) {
			for {
				ferr = unix.Fallocate(int(fd), 0, lo, end-lo)
				if ferr != unix.EINTR {
					return
				}
			}
		})
		if err == nil {
			err = ferr
		}
		switch {
		case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
			return nil
		case err != nil:
			return &os.PathError{Op: "fallocate", Path: b.f.Name(), Err: err}
		}
		lo = end
	}
	return nil
}

// Allocated is how many bytes of the file's blocks are allocated (the
// blocks stat counts): what the file takes of its file system now.
func (b *Backing) Allocated() (int64, error) {
	st, err := b.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Sys().(*syscall.Stat_t).Blocks * 512, nil
}

// Close closes the file; the mapping stays. Commit fails afterwards.
func (b *Backing) Close() error { return b.f.Close() }

// mapFile sizes (when create) and maps f, and always closes it: the
// mapping keeps the file alive on its own.
func mapFile(f *os.File, size int, create bool) (b []byte, err error) {
	defer func() { err = errors.Join(err, f.Close()) }()
	if create {
		return sizeAndMap(f, size, true)
	}
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if st.Size != int64(size) {
		return nil, fmt.Errorf("sys: %s is %d bytes long, want %d", f.Name(), st.Size, size)
	}
	b, err = mapAligned(fd, size, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	return b, nil
}

// sizeAndMap sizes the new file f to size bytes, allocates its blocks
// when allocate (where the file system can), and maps it.
func sizeAndMap(f *os.File, size int, allocate bool) ([]byte, error) {
	fd := int(f.Fd())
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, &os.PathError{Op: "ftruncate", Path: f.Name(), Err: err}
	}
	if allocate {
		err := unix.Fallocate(fd, 0, 0, int64(size))
		if err != nil && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			return nil, &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
	}
	b, err := mapAligned(fd, size, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	return b, nil
}

// Unmap releases a mapping returned by CreateShared, OpenShared or
// MapPrivate. b must be that very slice; a nil or empty b is a no-op, and
// unmapping the same mapping twice is an error, never a second unmap of
// whatever lives there now.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unmap(b); err != nil {
		return os.NewSyscallError("munmap", err)
	}
	return nil
}

// Retire ends a mapping returned by CreateShared, OpenShared or
// MapPrivate for good, as Unmap does, but keeps its addresses: it
// replaces every page of b at once with private anonymous memory, reading
// as zeros, and forgets the mapping, which is never unmapped. Slices of b
// that outlive their owner then read and write memory of this process
// only: what b mapped (a shared file, other processes' view of it) is out
// of their reach, and an access through them, during the call or long
// after, never faults. It is how a region's memory ends (see core.Domain's
// Close): a program may keep slices of its heap past the end of the job.
// The cost is the address range, kept until the process ends, and the
// pages written after the call. b must be that very slice; a nil or
// empty b is a no-op, and retiring or unmapping it afterwards is an error.
func Retire(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := retire(b); err != nil {
		return os.NewSyscallError("mmap", err)
	}
	return nil
}
