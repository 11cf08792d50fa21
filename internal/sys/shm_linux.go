//go:build linux

package sys

import (
	"errors"
	"fmt"
	"os"

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

// mapFile sizes (when create) and maps f, and always closes it: the
// mapping keeps the file alive on its own.
func mapFile(f *os.File, size int, create bool) (b []byte, err error) {
	defer func() { err = errors.Join(err, f.Close()) }()
	fd := int(f.Fd())
	if create {
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			return nil, &os.PathError{Op: "ftruncate", Path: f.Name(), Err: err}
		}
		err := unix.Fallocate(fd, 0, 0, int64(size))
		if err != nil && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			return nil, &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
	} else {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
		}
		if st.Size != int64(size) {
			return nil, fmt.Errorf("sys: %s is %d bytes long, want %d", f.Name(), st.Size, size)
		}
	}
	b, err = mapAligned(fd, size, unix.MAP_SHARED)
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
