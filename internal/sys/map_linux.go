//go:build linux

package sys

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mappings holds every live mapping of this package, by the address of
// its first byte, with its length: Unmap refuses a slice that is not one
// of them (a subslice, a foreign slice, a mapping unmapped already)
// rather than unmap whatever lives at that address now.
var mappings struct {
	sync.Mutex
	live map[uintptr]int
}

// mapAligned maps size bytes of fd (of anonymous memory when fd is -1),
// readable and writable, at an address aligned to Alignment(size). The
// kernel only promises a page, so it reserves an inaccessible range long
// enough to hold the mapping at some aligned address, places the mapping
// there over the reservation, and gives back what is left on either side:
// what remains is exactly one mapping of size bytes, as from a plain
// mmap.
func mapAligned(fd, size, flags int) ([]byte, error) {
	const prot = unix.PROT_READ | unix.PROT_WRITE
	page := uintptr(os.Getpagesize())
	align := uintptr(Alignment(size))
	length := (uintptr(size) + page - 1) &^ (page - 1)
	var p unsafe.Pointer
	if align <= page {
		var err error
		if p, err = unix.MmapPtr(fd, 0, nil, uintptr(size), prot, flags); err != nil {
			return nil, err
		}
	} else {
		// The reservation starts on a page, so its first aligned address
		// is at most align-page into it.
		span := length + align - page
		resv, err := unix.MmapPtr(-1, 0, nil, span, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			return nil, err
		}
		head := (align - uintptr(resv)&(align-1)) & (align - 1)
		p, err = unix.MmapPtr(fd, 0, unsafe.Add(resv, head), uintptr(size), prot, flags|unix.MAP_FIXED)
		if err != nil {
			_ = unix.MunmapPtr(resv, span)
			return nil, err
		}
		// Trimming a range this function reserved cannot fail; were it
		// to, the rest would only stay reserved and inaccessible.
		if head > 0 {
			_ = unix.MunmapPtr(resv, head)
		}
		if tail := span - head - length; tail > 0 {
			_ = unix.MunmapPtr(unsafe.Add(p, length), tail)
		}
	}
	mappings.Lock()
	if mappings.live == nil {
		mappings.live = map[uintptr]int{}
	}
	mappings.live[uintptr(p)] = size
	mappings.Unlock()
	return unsafe.Slice((*byte)(p), size), nil
}

// unmap releases a mapping of mapAligned, which b must be exactly.
func unmap(b []byte) error {
	p := unsafe.Pointer(unsafe.SliceData(b))
	mappings.Lock()
	n, ok := mappings.live[uintptr(p)]
	if ok && n == len(b) && cap(b) == len(b) {
		delete(mappings.live, uintptr(p))
	} else {
		ok = false
	}
	mappings.Unlock()
	if !ok {
		return unix.EINVAL
	}
	return unix.MunmapPtr(p, uintptr(len(b)))
}

// retire ends a mapping of mapAligned, which b must be exactly, without
// giving its addresses back (see Retire).
func retire(b []byte) error {
	p := unsafe.Pointer(unsafe.SliceData(b))
	mappings.Lock()
	defer mappings.Unlock()
	n, ok := mappings.live[uintptr(p)]
	if !ok || n != len(b) || cap(b) != len(b) {
		return unix.EINVAL
	}
	page := uintptr(os.Getpagesize())
	length := (uintptr(len(b)) + page - 1) &^ (page - 1)
	// One mmap replaces every page at once: an access running meanwhile
	// sees the old page or the new one, never a hole. NORESERVE: pages
	// nobody touches again cost neither memory nor commit charge.
	_, err := unix.MmapPtr(-1, 0, p, length, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	if err != nil {
		return err // the mapping is as it was, still to be unmapped
	}
	delete(mappings.live, uintptr(p))
	return nil
}
