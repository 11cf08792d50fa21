package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The active-set reductions (shmem_TYPENAME_OP_to_all): dest[i], on every
// member of as, becomes the reduction of source[i] over the members, for
// len(source) elements. dest is symmetric, holds at least as many and may
// be source itself; pWrk is symmetric and holds at least
// ReduceWorkSize(len(source)) elements; pSync holds at least
// ReduceSyncSize words. Every member passes the same length. Every member
// gets the same bits, floating-point sums included.

// AndToAll is the bitwise and (shmem_TYPENAME_and_to_all).
func AndToAll[T BitwiseElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return reduceToAll(w, "and_to_all", dest, source, as, pWrk, pSync, func(a, b []T) {
		for i := range a {
			a[i] &= b[i]
		}
	})
}

// OrToAll is the bitwise or (shmem_TYPENAME_or_to_all).
func OrToAll[T BitwiseElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return reduceToAll(w, "or_to_all", dest, source, as, pWrk, pSync, func(a, b []T) {
		for i := range a {
			a[i] |= b[i]
		}
	})
}

// XorToAll is the bitwise exclusive or (shmem_TYPENAME_xor_to_all).
func XorToAll[T BitwiseElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return reduceToAll(w, "xor_to_all", dest, source, as, pWrk, pSync, func(a, b []T) {
		for i := range a {
			a[i] ^= b[i]
		}
	})
}

// MaxToAll is the maximum (shmem_TYPENAME_max_to_all).
func MaxToAll[T OrderedElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return reduceToAll(w, "max_to_all", dest, source, as, pWrk, pSync, func(a, b []T) {
		for i := range a {
			a[i] = max(a[i], b[i])
		}
	})
}

// MinToAll is the minimum (shmem_TYPENAME_min_to_all).
func MinToAll[T OrderedElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return reduceToAll(w, "min_to_all", dest, source, as, pWrk, pSync, func(a, b []T) {
		for i := range a {
			a[i] = min(a[i], b[i])
		}
	})
}

// SumToAll is the sum (shmem_TYPENAME_sum_to_all), complex types included.
func SumToAll[T ArithElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return reduceToAll(w, "sum_to_all", dest, source, as, pWrk, pSync, func(a, b []T) {
		for i := range a {
			a[i] += b[i]
		}
	})
}

// ProdToAll is the product (shmem_TYPENAME_prod_to_all), complex types
// included.
func ProdToAll[T ArithElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return reduceToAll(w, "prod_to_all", dest, source, as, pWrk, pSync, func(a, b []T) {
		for i := range a {
			a[i] *= b[i]
		}
	})
}

// ReduceWorkSize is the number of pWrk elements a reduction of nreduce
// elements uses: max(nreduce/2+1, ReduceMinWrkdataSize), as the spec
// sizes pWrk. Every member uses exactly this many, whatever the length of
// the pWrk it passes, so all cut the data alike.
func ReduceWorkSize(nreduce int) int { return max(nreduce/2+1, ReduceMinWrkdataSize) }

// reduceToAll reduces up a combining tree over the set's ranks, rooted at
// rank 0, and sends the result back down into every member's dest: each
// child puts its partial result into its slot of the parent's pWrk and
// counts its arrival; the parent combines its children's slots in child
// order into its own dest, and once the root has the whole, each parent
// puts it into its children's dest and releases them. Since one member
// computes every element, all get the same bits.
//
// pWrk holds arity slots of chunk elements, so data larger than a slot
// goes chunk after chunk. The arity is as large as pWrk allows, up to
// treeArity, so small reductions take one pass of two waits; a child
// sends the next chunk only after the release of the last one, which its
// parent sent after combining it, so the slots need no other flow control.
// That also makes the call self-contained: once a PE returns, nobody
// writes its pSync or pWrk for this call any more, and a reduction may
// follow on the same set at once, as reductions in 1.4 programs do.
func reduceToAll[T Elem](w *World, op string, dest, source []T, as ActiveSet, pWrk []T, pSync []int64, combine func(acc, in []T)) error {
	c, err := w.begin(op, as, pSync, ReduceSyncSize)
	if err != nil {
		return err
	}
	nred := len(source)
	dr, off, err := asDest(w, op, dest, nred)
	if err != nil || nred == 0 {
		return err
	}
	if len(source) > 0 && len(dest) > 0 && &source[0] != &dest[0] && overlap(mem.Bytes(dest[:nred]), mem.Bytes(source)) {
		return fmt.Errorf("shmem: %s: dest and source overlap without being the same array: %w", op, core.ErrInvalid)
	}
	work := ReduceWorkSize(nred)
	if len(pWrk) < work {
		return fmt.Errorf("shmem: %s: pWrk holds %d elements, a reduction of %d needs %d: %w", op, len(pWrk), nred, work, core.ErrInvalid)
	}
	wr, wrk, err := w.sym(op, mem.Addr(pWrk), work*mem.SizeOf[T]())
	if err != nil {
		return w.addrError(op+" pWrk", mem.Addr(pWrk), work*mem.SizeOf[T]())
	}
	acc := dest[:nred]
	copy(acc, source)
	if c.n == 1 {
		return nil
	}
	arity := min(max(work/nred, 2), treeArity, c.n-1)
	chunk := work / arity
	return wrap(op, reduceTree(&c, acc, pWrk[:work], symAt{dr, off}, symAt{wr, wrk}, arity, chunk, combine))
}

// symAt is a place in symmetric memory: a region, the heap or registered
// static data, and an offset in it.
type symAt struct {
	r   core.Region
	off int
}

func reduceTree[T Elem](c *asCall, acc, pWrk []T, dest, wrk symAt, arity, chunk int, combine func(acc, in []T)) error {
	ep := c.w.coll.ep
	size := mem.SizeOf[T]()
	first, kids := c.treeKids(arity)
	parent, slot := (c.me-1)/arity, (c.me-1)%arity
	for lo := 0; lo < len(acc); lo += chunk {
		part := acc[lo:min(lo+chunk, len(acc))]
		if kids > 0 {
			if err := c.consume(psArrive, int64(kids)); err != nil {
				return err
			}
			for j := range kids {
				combine(part, pWrk[j*chunk:j*chunk+len(part)])
			}
		}
		if c.me > 0 {
			// The payload lands before the count that announces it.
			if err := ep.Put(c.as.PE(parent), wrk.r, wrk.off+slot*chunk*size, mem.Bytes(part)); err != nil {
				return err
			}
			if err := ep.Fence(); err != nil {
				return err
			}
			if err := c.add(parent, psArrive, 1); err != nil {
				return err
			}
			// The parent puts the result into part before it releases.
			if err := c.consume(psRelease, 1); err != nil {
				return err
			}
		}
		if kids == 0 {
			continue
		}
		for k := first; k < first+kids; k++ {
			if err := ep.Put(c.as.PE(k), dest.r, dest.off+lo*size, mem.Bytes(part)); err != nil {
				return err
			}
		}
		if err := ep.Fence(); err != nil {
			return err
		}
		for k := first; k < first+kids; k++ {
			if err := c.add(k, psRelease, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// overlap reports whether a and b share a byte.
func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := mem.Addr(a), mem.Addr(b)
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}
