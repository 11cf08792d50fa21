package shmem

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// A C program's global and static variables are symmetric in OpenSHMEM:
// its data and bss segments are symmetric segments beside the heap, at
// the same addresses in every PE of one executable. RegisterStatic makes
// such memory a provider region (core.Domain.RegisterRegion), and every
// operation that takes a symmetric address translates an address inside
// it to (that region, offset), after the heap: the heap's check stays the
// first and only one for heap addresses.

// segment is a registered symmetric segment: memory the program had.
type segment struct {
	region core.Region
	base   uintptr
	size   int
}

// segments is the World's registered segments, replaced whole on each
// registration, so readers take it with one atomic load and no lock.
type segments = atomic.Pointer[[]segment]

// WithStaticData registers mem, memory the program already has (a C
// program's data and bss segments), as a symmetric segment when Init
// runs, as RegisterStatic would right after it.
func WithStaticData(mem []byte) Option {
	return func(o *options) { o.static = append(o.static, mem) }
}

// RegisterStatic makes mem, memory the program already has, a symmetric
// segment: every RMA, atomic, signal, wait and lock call then takes
// addresses inside it as it takes heap addresses, and a peer reaches its
// copy at the same offset. It is collective: every PE passes memory of
// the same length, at the same point of the job, else all fail naming
// the PEs and lengths. mem must start on a page boundary and be whole
// pages (core.CheckRegisterMem). Its contents are kept, and so is its
// address, though a provider whose PEs map each other's memory moves it
// onto shared memory in place, so nothing may store into mem while
// RegisterStatic runs. After Finalize mem is still the program's, private
// again and holding what it held. Malloc never allocates from it, and
// Free refuses it.
func (w *World) RegisterStatic(m []byte) error {
	if err := w.Err(); err != nil {
		return fmt.Errorf("shmem: register static data: %w", err)
	}
	r, err := w.dom.RegisterRegion(m)
	if err != nil {
		return fmt.Errorf("shmem: register %d bytes of static data at %#x: %w", len(m), mem.Addr(m), err)
	}
	if len(m) == 0 {
		return nil
	}
	w.segMu.Lock()
	defer w.segMu.Unlock()
	var segs []segment
	if old := w.segs.Load(); old != nil {
		segs = append(segs, *old...)
	}
	segs = append(segs, segment{region: r, base: mem.Addr(m), size: len(m)})
	w.segs.Store(&segs)
	return nil
}

// sym translates the n bytes at addr into the symmetric region holding
// them and the offset there: the user part of the heap, checked first
// and inline, else a registered segment, else an error naming both.
func (w *World) sym(op string, addr uintptr, n int) (core.Region, int, error) {
	off, end := addr-w.base, uintptr(internalSize+w.heapSize)
	if addr >= w.base && off >= internalSize && off <= end && uintptr(n) <= end-off {
		return w.heap, int(off), nil
	}
	return w.symStatic(op, addr, n)
}

// SymmetricExtent is how many bytes from addr on are symmetric in one
// piece, to the end of the heap or of the registered segment addr lies
// in; 0 where addr is not symmetric. It allocates nothing: the C
// interface asks it for the room a collect's dest has, which the call
// does not say.
func (w *World) SymmetricExtent(addr uintptr) int {
	end := uintptr(internalSize + w.heapSize)
	if off := addr - w.base; addr >= w.base && off >= internalSize && off < end {
		return int(end - off)
	}
	if segs := w.segs.Load(); segs != nil {
		for _, s := range *segs {
			if off := addr - s.base; addr >= s.base && off < uintptr(s.size) {
				return s.size - int(off)
			}
		}
	}
	return 0
}

// symStatic is sym past the heap: the registered segments.
func (w *World) symStatic(op string, addr uintptr, n int) (core.Region, int, error) {
	if segs := w.segs.Load(); segs != nil {
		for _, s := range *segs {
			if off := addr - s.base; addr >= s.base && off <= uintptr(s.size) && uintptr(n) <= uintptr(s.size)-off {
				return s.region, int(off), nil
			}
		}
	}
	return nil, 0, w.addrError(op, addr, n)
}

// staticRanges describes the registered segments for an error message.
func (w *World) staticRanges() string {
	segs := w.segs.Load()
	if segs == nil || len(*segs) == 0 {
		return "no static data is registered (RegisterStatic)"
	}
	s := "nor inside registered static data"
	for i, g := range *segs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" [%#x, %#x)", g.base, g.base+uintptr(g.size))
	}
	return s
}
