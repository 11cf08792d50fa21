package sys

import (
	"math/bits"
	"os"
)

// WakeAll is the n for FutexWake that wakes every waiter.
const WakeAll = 1<<31 - 1

// Alignment is the alignment of the first byte of every mapping of size
// bytes that CreateShared, OpenShared and MapPrivate return: the largest
// power of two not above size, and at least a page. Each process maps a
// symmetric region at an address of its own; because every one of those
// addresses is aligned this much, an offset in the region that is a
// multiple of a power of two up to the region's size is an address with
// that alignment in every process, so aligning offsets keeps both the
// alignment a program asked for and the symmetry.
func Alignment(size int) int {
	page := os.Getpagesize()
	if size <= page {
		return page
	}
	return 1 << (bits.Len(uint(size)) - 1)
}
