package shmem

import (
	"fmt"
	"math"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The data-moving collectives put straight into the members' dest, which
// is symmetric. Each starts with a barrier, so nobody writes into a dest a
// member may still be reading from the previous collective, and those with
// many senders end with one, after which every put has landed. They work
// on bytes, so one body serves every element type.

// Broadcast copies source on team rank root into dest on every member,
// root included (shmem_broadcast). It moves len(source) elements; every
// member passes the same length and dest, a symmetric buffer holding at
// least as many. Small data travels down the combining tree rooted at
// root, larger data straight into dest down a binomial tree.
func Broadcast[T Elem](t *Team, dest, source []T, root int) error {
	const op = "broadcast"
	if err := t.check(op); err != nil {
		return err
	}
	if n := len(t.members); root < 0 || root >= n {
		return fmt.Errorf("shmem: %s: root %d is not a rank of the team (0 to %d): %w", op, root, n-1, core.ErrInvalid)
	}
	dr, off, err := symDest(t, op, dest, len(source))
	if err != nil || len(source) == 0 {
		return err
	}
	b := mem.Bytes(dest[:len(source)])
	if t.g.pushFits(len(b)) {
		return t.collErr(op, t.g.push(root, gwFrom+gword(root), b, mem.Bytes(source), dr, off, true))
	}
	if t.treeFits(len(b)) {
		if t.me == root {
			copy(b, mem.Bytes(source))
		}
		return t.collErr(op, tree(&t.g, root, b, nil, true))
	}
	if t.shape != nil {
		return t.collErr(op, t.hostBroadcast(b, mem.Bytes(source), root, dr, off))
	}
	return t.collErr(op, t.broadcast(b, mem.Bytes(source), root, dr, off))
}

// broadcast: in a binomial tree rooted at root (see binomialSend), every
// member but the root hears once, then forwards. dest is at off in dr on
// every member.
func (t *Team) broadcast(dest, source []byte, root int, dr core.Region, off int) error {
	n := len(t.members)
	if err := t.barrier(); err != nil {
		return err
	}
	rel := (t.me - root + n) % n
	if rel == 0 {
		copy(dest, source)
	} else if err := t.g.await(gwData, 1); err != nil {
		return err
	}
	return t.g.binomialSend(overTeam, rel, n, root, dest, dr, off)
}

// FCollect concatenates the members' source, in rank order, into dest on
// every member (shmem_fcollect). Every member passes the same length;
// dest is symmetric and holds NPEs() times as many elements. Small results
// gather up the combining tree and come back down; larger ones are put
// straight into every member's dest.
func FCollect[T Elem](t *Team, dest, source []T) error {
	const op = "fcollect"
	if err := t.check(op); err != nil {
		return err
	}
	n := len(source)
	dr, off, err := symDest(t, op, dest, n*len(t.members))
	if err != nil || n == 0 {
		return err
	}
	size := n * mem.SizeOf[T]()
	if t.stageFits(size) {
		in, err := t.stage(size, func(int) []byte { return mem.Bytes(source) })
		if err == nil {
			copy(mem.Bytes(dest[:n*len(t.members)]), in)
		}
		return t.collErr(op, err)
	}
	if all := dest[:n*len(t.members)]; t.treeFits(len(mem.Bytes(all))) {
		// Each PE's block, zeros elsewhere, or-ed together up the tree.
		b := mem.Bytes(all)
		clear(b)
		copy(b[t.me*size:], mem.Bytes(source))
		return t.collErr(op, tree(&t.g, 0, b, orBytes, true))
	}
	if err := t.barrier(); err != nil {
		return t.collErr(op, err)
	}
	if t.shape != nil {
		at := t.blockEnds(size, nil, 0)
		return t.collErr(op, t.hostGather(mem.Bytes(dest[:n*len(t.members)]), dr, off, at, mem.Bytes(source)))
	}
	return t.collErr(op, fcollect(&t.g, dest, source, dr, off))
}

// fcollect puts this PE's source into block MyPE() of every member's
// dest, at off in dr, and returns once every member's block has landed
// here. It starts where nobody reads dest any more: on a team after a
// barrier; on an active set, whose program synchronises before reusing
// dest, at once.
func fcollect[T Elem](g *group, dest, source []T, dr core.Region, off int) error {
	m := len(source)
	at := off + g.me*m*mem.SizeOf[T]()
	var held [maxDirect]uint64
	return g.gather(func(r int) error {
		if r == g.me {
			// A put completes at the next quiet, which direct does not
			// wait for: this PE's own part is copied, done on return.
			copy(dest[g.me*m:], source)
			return nil
		}
		return g.w.coll.ep.Put(g.pe(r), dr, at, mem.Bytes(source))
	}, &held)
}

func orBytes(acc, in []byte) {
	for i := range acc {
		acc[i] |= in[i]
	}
}

// Collect concatenates the members' source, in rank order, into dest on
// every member (shmem_collect); unlike FCollect, each member may
// contribute a different number of elements. dest is symmetric and holds
// their sum. Each member learns where its part goes from a parallel
// prefix sum over the team.
func Collect[T Elem](t *Team, dest, source []T) error {
	const op = "collect"
	if err := t.check(op); err != nil {
		return err
	}
	dr, off, err := symDest(t, op, dest, 0)
	if err != nil {
		return err
	}
	if t.shape != nil {
		sizes, ok, err := t.gatherSizes(len(source))
		if err != nil {
			return t.collErr(op, err)
		}
		if ok {
			return hostCollect(t, op, dest, source, dr, off, sizes)
		}
	}
	if err := t.barrier(); err != nil {
		return t.collErr(op, err)
	}
	return collect(&t.g, op, dest, source, dr, off)
}

// collect places this PE's source after the parts of the ranks below it
// in every member's dest, at off in dr, and returns once every member's
// part has landed here. Each member learns where its part goes from the
// counts of the ranks below it: told directly in groups of up to
// maxDirect members, from a parallel prefix sum in larger ones. It starts
// where nobody reads dest any more, as fcollect does.
func collect[T Elem](g *group, op string, dest, source []T, dr core.Region, off int) error {
	var held [maxDirect]uint64
	var at uint64
	var err error
	if g.n <= maxDirect {
		at, err = g.countsBelow(uint64(len(source)), &held)
	} else {
		at, err = g.prefixSum(uint64(len(source)))
	}
	if err != nil {
		return wrap(op, err)
	}
	var bad error
	if at+uint64(len(source)) > uint64(len(dest)) {
		// Refuse to write past dest, but stay in step with the group.
		bad = fmt.Errorf("shmem: %s: this PE's %d elements go at %d, past the end of dest (%d elements): %w",
			op, len(source), at, len(dest), core.ErrInvalid)
		source = nil
	}
	to := off + int(at)*mem.SizeOf[T]()
	err = g.gather(func(r int) error {
		if len(source) == 0 {
			return nil
		}
		if r == g.me {
			copy(dest[at:], source) // as in fcollect
			return nil
		}
		return g.w.coll.ep.Put(g.pe(r), dr, to, mem.Bytes(source))
	}, &held)
	if bad != nil {
		return bad
	}
	return wrap(op, g.w.exitOr(err))
}

// hostCollect is Collect's data movement on a team with a host shape, once
// every member's element count is in sizes.
func hostCollect[T Elem](t *Team, op string, dest, source []T, dr core.Region, off int, sizes []uint64) error {
	size := mem.SizeOf[T]()
	at := t.blockEnds(0, sizes, size)
	if at == nil {
		// Every member has the same counts, so every member stops here.
		return fmt.Errorf("shmem: %s: the members' element counts add up past what a slice can hold: %w", op, core.ErrInvalid)
	}
	var bad error
	if at[t.me+1] > len(dest)*size {
		// Refuse to write past dest, but stay in step with the team.
		bad = fmt.Errorf("shmem: %s: this PE's %d elements go at %d, past the end of dest (%d elements): %w",
			op, len(source), at[t.me]/size, len(dest), core.ErrInvalid)
		source = nil
	}
	err := t.hostGather(mem.Bytes(dest), dr, off, at, mem.Bytes(source))
	if bad != nil {
		return bad
	}
	return t.collErr(op, err)
}

// Alltoall sends block j of source, nelems elements at j*nelems, to every
// member j, where it lands in block MyPE() of dest (shmem_alltoall).
// Every member passes the same nelems; source holds NPEs()*nelems elements
// and dest, symmetric, as many.
func Alltoall[T Elem](t *Team, dest, source []T, nelems int) error {
	return Alltoalls(t, dest, source, 1, 1, nelems)
}

// Alltoalls is Alltoall with strides (shmem_alltoalls): element k of the
// block for member j is source[(j*nelems+k)*sst] and lands at
// dest[(MyPE()*nelems+k)*dst] on j. Strides are at least 1.
func Alltoalls[T Elem](t *Team, dest, source []T, dst, sst, nelems int) error {
	return AlltoallsBytes(t, mem.Bytes(dest), mem.Bytes(source), mem.SizeOf[T](), dst, sst, nelems)
}

// AlltoallsBytes is Alltoalls of elements of esize bytes (1, 2, 4, 8 or
// 16) held as bytes, for callers that know an element's size but no Go
// type for it (the C library). Counts and strides are in elements.
func AlltoallsBytes(t *Team, dest, source []byte, esize, dst, sst, nelems int) error {
	const op = "alltoall"
	if err := t.check(op); err != nil {
		return err
	}
	return t.collErr(op, alltoalls(&t.g, op, dest, source, esize, dst, sst, nelems))
}

// alltoalls moves the blocks of an alltoalls of elements of esize bytes
// over g and returns once every member's have landed here, as the
// gathers do (group.gather). A strided element of at most 8 bytes moves as
// one value. On a team, whose members may still read dest after their
// last call, it stages a contiguous alltoall that stageFits, and
// otherwise first waits at the team's barrier, as fcollect does.
func alltoalls(g *group, op string, dest, source []byte, esize, dst, sst, nelems int) error {
	n, t := g.n, g.team
	if err := checkElemSize(op, esize); err != nil {
		return err
	}
	if dst < 1 || sst < 1 || nelems < 0 {
		return fmt.Errorf("shmem: %s: strides %d, %d and count %d: strides must be at least 1 and the count not negative: %w",
			op, dst, sst, nelems, core.ErrInvalid)
	}
	if nelems == 0 {
		if t != nil {
			return t.barrier()
		}
		return nil
	}
	all := n * nelems
	srcSpan, destSpan := stridedSpan(all, sst), stridedSpan(all, dst)
	if all/n != nelems || srcSpan < 0 || destSpan < 0 || srcSpan > math.MaxInt/esize || destSpan > math.MaxInt/esize {
		return fmt.Errorf("shmem: %s of %d elements to each of %d members at strides %d and %d overflows: the span is more than %d bytes: %w",
			op, nelems, n, dst, sst, math.MaxInt, core.ErrInvalid)
	}
	if len(source) < srcSpan*esize {
		return fmt.Errorf("shmem: %s: source holds %d elements, %d are needed: %w", op, len(source)/esize, srcSpan, core.ErrInvalid)
	}
	if len(dest) < destSpan*esize {
		return fmt.Errorf("shmem: %s: dest holds %d elements, %d are needed: %w", op, len(dest)/esize, destSpan, core.ErrInvalid)
	}
	dr, off, err := symIn(g.w, op, dest, destSpan*esize)
	if err != nil {
		return err
	}
	if blk := nelems * esize; t != nil && dst == 1 && sst == 1 && t.stageFits(blk) {
		in, err := t.stage(blk, func(r int) []byte { return source[r*blk : (r+1)*blk] })
		if err == nil {
			copy(dest, in)
		}
		return err
	}
	if t != nil {
		if err := t.barrier(); err != nil {
			return err
		}
	}
	ep := g.w.coll.ep
	value := esize <= 8
	var held [maxDirect]uint64
	return g.gather(func(to int) error {
		if to == g.me {
			// Copied, done on return: direct does not quiet (fcollect).
			at := g.me * nelems
			if dst == 1 && sst == 1 {
				copy(dest[at*esize:(at+nelems)*esize], source[at*esize:])
				return nil
			}
			for k := at; k < at+nelems; k++ {
				copy(dest[k*dst*esize:][:esize], source[k*sst*esize:])
			}
			return nil
		}
		pe := g.pe(to)
		if dst == 1 && sst == 1 {
			return ep.Put(pe, dr, off+g.me*nelems*esize, source[to*nelems*esize:(to+1)*nelems*esize])
		}
		for k := 0; k < nelems; k++ {
			o := off + (g.me*nelems+k)*dst*esize
			e := source[(to*nelems+k)*sst*esize:][:esize]
			var err error
			if value {
				err = ep.PutValue(pe, dr, o, mem.LoadValue(e, 0, esize), esize)
			} else {
				err = ep.Put(pe, dr, o, e)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}, &held)
}

// symDest checks that dest holds at least n elements and is symmetric, and
// returns its region, the heap or registered static data, and its offset
// there.
func symDest[T Elem](t *Team, op string, dest []T, n int) (core.Region, int, error) {
	return symIn(t.w, op, dest, n)
}

// symIn is symDest on World w.
func symIn[T Elem](w *World, op string, dest []T, n int) (core.Region, int, error) {
	if len(dest) < n {
		return nil, 0, fmt.Errorf("shmem: %s: dest holds %d elements, %d are needed: %w", op, len(dest), n, core.ErrInvalid)
	}
	if len(dest) == 0 {
		return nil, 0, nil // nothing will be written
	}
	return w.sym(op, mem.Addr(dest), len(dest)*mem.SizeOf[T]())
}

func wrap(op string, err error) error {
	if err != nil {
		return fmt.Errorf("shmem: %s: %w", op, err)
	}
	return nil
}

// collErr is wrap for a collective that may fail because a peer left
// after a global exit: it reports the global exit instead.
func (t *Team) collErr(op string, err error) error {
	if err != nil {
		return wrap(op, t.w.exitOr(err))
	}
	return nil
}
