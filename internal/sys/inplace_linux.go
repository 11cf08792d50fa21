//go:build linux

package sys

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// checkPages refuses memory that a mapping cannot replace exactly: empty,
// or not whole pages from a page boundary.
func checkPages(op string, b []byte) error {
	page := uintptr(os.Getpagesize())
	switch {
	case len(b) == 0:
		return fmt.Errorf("sys: %s: the memory is empty", op)
	case uintptr(unsafe.Pointer(&b[0]))%page != 0:
		return fmt.Errorf("sys: %s: the memory starts at %#x, not on a %d-byte page boundary", op, uintptr(unsafe.Pointer(&b[0])), page)
	case uintptr(len(b))%page != 0:
		return fmt.Errorf("sys: %s: the memory is %d bytes long, not a multiple of the %d-byte page", op, len(b), page)
	}
	return nil
}

// ShareInPlace moves the memory b onto a new shared file at path (mode
// 0600, failing if it exists), keeping b's address and contents: it
// creates and sizes the file, copies b into a mapping of it and moves that
// mapping over b with one mremap, so b is never unmapped, even for an
// instant. Afterwards other processes that map the file (OpenShared) share
// b with this one. b must be whole pages from a page boundary, as mmap
// requires; it may be any mapping, such as a program's data segment.
//
// Stores into b by other goroutines while ShareInPlace runs may be lost:
// the caller keeps b still meanwhile. As with CreateShared, the file's
// name belongs to the caller, who removes it once its peers have mapped
// it; if ShareInPlace fails, it removes the file itself and b is as it
// was. The mapping then belongs to whoever owned b: release it with
// Unshare (to keep the memory) or Unmap, never both.
func ShareInPlace(path string, b []byte) error {
	if err := checkPages("share in place", b); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = shareFile(f, b)
	err = errors.Join(err, f.Close())
	if err != nil {
		err = errors.Join(err, os.Remove(path))
	}
	return err
}

func shareFile(f *os.File, b []byte) error {
	fd, size := int(f.Fd()), len(b)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return &os.PathError{Op: "ftruncate", Path: f.Name(), Err: err}
	}
	err := unix.Fallocate(fd, 0, 0, int64(size))
	if err != nil && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	tmp, err := unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	fill(unsafe.Slice((*byte)(tmp), size), b)
	return moveOver(tmp, b)
}

// fillChunk is how much of src fill copies at a time. A copy is one
// runtime memmove, which the scheduler cannot preempt: over a whole
// symmetric heap (hundreds of MiB, each page faulted in) it would keep
// every other goroutine of a process with one P off the CPU for as long
// as it takes, seconds on a loaded host, a device emulator's heartbeat
// among them, whose peers then take the link for dead. A loop of
// memmoves is hardly ever stopped either (the preemption signal almost
// always finds it inside one), so fill yields between chunks.
const fillChunk = 1 << 20

// fill copies src into dst, fresh file pages that read as zeros, chunk
// by chunk, skipping the chunks of src that are zeros too (most of a heap
// that has just been made), and lets other goroutines run after each.
func fill(dst, src []byte) {
	for off := 0; off < len(src); off += fillChunk {
		end := min(off+fillChunk, len(src))
		if !zeros(src[off:end]) {
			copy(dst[off:end], src[off:end])
		}
		runtime.Gosched()
	}
}

// zeros reports whether b holds only zero bytes; b is whole pages, so a
// multiple of 8 bytes long from an 8-byte boundary.
func zeros(b []byte) bool {
	words := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
	for _, w := range words {
		if w != 0 {
			return false
		}
	}
	return true
}

// moveOver moves the size-of-b mapping at tmp over b, replacing whatever
// b was in one step; on failure it unmaps tmp and b is unchanged.
func moveOver(tmp unsafe.Pointer, b []byte) error {
	_, err := unix.MremapPtr(tmp, uintptr(len(b)), unsafe.Pointer(&b[0]), uintptr(len(b)), unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED)
	if err != nil {
		_ = unix.MunmapPtr(tmp, uintptr(len(b)))
		return os.NewSyscallError("mremap", err)
	}
	return nil
}

// MapSharedAt maps the existing file at path, which must be exactly
// len(b) bytes long, shared over b: b keeps its address and from now on
// reads what the file holds, not what it held. b must be whole pages
// from a page boundary. The mapping belongs to whoever owned b.
func MapSharedAt(path string, b []byte) error {
	if err := checkPages("map "+path+" in place", b); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Size != int64(len(b)) {
		return fmt.Errorf("sys: %s is %d bytes long, want %d", path, st.Size, len(b))
	}
	_, err = unix.MmapPtr(int(f.Fd()), 0, unsafe.Pointer(&b[0]), uintptr(len(b)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		return &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return nil
}

// Unshare replaces the mapping under b (from ShareInPlace, say) with
// private anonymous memory holding the same contents, in place and in one
// step, so b stays usable, and no longer shared, after the peers that
// mapped it are gone. Stores into b by other goroutines or processes
// while Unshare runs may be lost. b must be whole pages from a page
// boundary.
func Unshare(b []byte) error {
	if err := checkPages("unshare", b); err != nil {
		return err
	}
	tmp, err := unix.MmapPtr(-1, 0, nil, uintptr(len(b)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	copy(unsafe.Slice((*byte)(tmp), len(b)), b)
	return moveOver(tmp, b)
}
