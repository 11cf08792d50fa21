package shmem

import (
	"fmt"

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
	if t.treeFits(len(b)) {
		if t.me == root {
			copy(b, mem.Bytes(source))
		}
		return t.collErr(op, tree(t, root, b, nil, true))
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
	t.bcastGen++
	gen := t.bcastGen
	rel := (t.me - root + n) % n
	flag := t.base() + bcastFlagOff
	if rel == 0 {
		copy(dest, source)
	} else if err := t.w.waitGE(flag, gen); err != nil {
		return err
	}
	return t.binomialSend(overTeam, rel, n, root, dest, dr, off, flag, gen)
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
	if all := dest[:n*len(t.members)]; t.treeFits(len(mem.Bytes(all))) {
		// Each PE's block, zeros elsewhere, or-ed together up the tree.
		b := mem.Bytes(all)
		clear(b)
		copy(b[t.me*size:], mem.Bytes(source))
		return t.collErr(op, tree(t, 0, b, orBytes, true))
	}
	if t.shape != nil {
		if err := t.barrier(); err != nil {
			return t.collErr(op, err)
		}
		at := t.blockEnds(size, nil, 0)
		return t.collErr(op, t.hostGather(mem.Bytes(dest[:n*len(t.members)]), dr, off, at, mem.Bytes(source)))
	}
	return t.collErr(op, t.exchange(func(to int) error {
		return t.w.coll.ep.Put(t.members[to], dr, off+t.me*size, mem.Bytes(source))
	}))
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
	at, err := t.prefixSum(uint64(len(source)))
	if err != nil {
		return t.collErr(op, err)
	}
	var bad error
	if at+uint64(len(source)) > uint64(len(dest)) {
		// Refuse to write past dest, but stay in step with the team.
		bad = fmt.Errorf("shmem: %s: this PE's %d elements go at %d, past the end of dest (%d elements): %w",
			op, len(source), at, len(dest), core.ErrInvalid)
		source = nil
	}
	size := mem.SizeOf[T]()
	err = t.spread(func(to int) error {
		if len(source) == 0 {
			return nil
		}
		return t.w.coll.ep.Put(t.members[to], dr, off+int(at)*size, mem.Bytes(source))
	})
	if bad != nil {
		return bad
	}
	return t.collErr(op, err)
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
	const op = "alltoall"
	if err := t.check(op); err != nil {
		return err
	}
	n := len(t.members)
	if dst < 1 || sst < 1 || nelems < 0 {
		return fmt.Errorf("shmem: %s: strides %d, %d and count %d: strides must be at least 1 and the count not negative: %w",
			op, dst, sst, nelems, core.ErrInvalid)
	}
	if nelems == 0 {
		return nil
	}
	if need := (n*nelems-1)*sst + 1; len(source) < need {
		return fmt.Errorf("shmem: %s: source holds %d elements, %d are needed: %w", op, len(source), need, core.ErrInvalid)
	}
	dr, off, err := symDest(t, op, dest, (n*nelems-1)*dst+1)
	if err != nil {
		return err
	}
	size := mem.SizeOf[T]()
	ep := t.w.coll.ep
	return t.collErr(op, t.exchange(func(to int) error {
		if dst == 1 && sst == 1 {
			return ep.Put(t.members[to], dr, off+t.me*nelems*size, mem.Bytes(source[to*nelems:(to+1)*nelems]))
		}
		for k := 0; k < nelems; k++ {
			i := (to*nelems + k) * sst
			if err := ep.Put(t.members[to], dr, off+(t.me*nelems+k)*dst*size, mem.Bytes(source[i:i+1])); err != nil {
				return err
			}
		}
		return nil
	}))
}

// exchange runs put towards every member, this PE included, between two
// barriers.
func (t *Team) exchange(put func(to int) error) error {
	if err := t.barrier(); err != nil {
		return err
	}
	return t.spread(put)
}

// spread runs put towards every member, starting after this PE so that
// not everyone writes to the same member at once, then completes the puts
// and waits for everyone's.
func (t *Team) spread(put func(to int) error) error {
	n := len(t.members)
	var first error
	for i := 0; i < n; i++ {
		if err := put((t.me + 1 + i) % n); err != nil && first == nil {
			first = err
		}
	}
	if err := t.w.coll.ep.Quiet(); err != nil && first == nil {
		first = err
	}
	if err := t.barrier(); err != nil {
		return err
	}
	return first
}

// prefixSum returns the sum of v over the ranks below this PE's, by the
// dissemination scan of Hillis and Steele: in round k each rank passes its
// running sum to rank me+2^k and adds the one from rank me-2^k.
func (t *Team) prefixSum(v uint64) (uint64, error) {
	n := len(t.members)
	t.scanGen++
	gen := t.scanGen
	ep := t.w.coll.ep
	sum := v
	for k := 0; 1<<k < n; k++ {
		off := t.base() + scanOff + k*cacheLine
		if to := t.me + 1<<k; to < n {
			if err := ep.PutValue(t.members[to], t.w.heap, off+8, sum, 8); err != nil {
				return 0, err
			}
			if err := ep.Fence(); err != nil {
				return 0, err
			}
			if err := t.signal(to, off, gen); err != nil {
				return 0, err
			}
		}
		if t.me >= 1<<k {
			if err := t.w.waitGE(off, gen); err != nil {
				return 0, err
			}
			sum += mem.LoadValue(t.w.local, off+8, 8)
		}
	}
	return sum - v, nil
}

// symDest checks that dest holds at least n elements and is symmetric, and
// returns its region, the heap or registered static data, and its offset
// there.
func symDest[T Elem](t *Team, op string, dest []T, n int) (core.Region, int, error) {
	if len(dest) < n {
		return nil, 0, fmt.Errorf("shmem: %s: dest holds %d elements, %d are needed: %w", op, len(dest), n, core.ErrInvalid)
	}
	if len(dest) == 0 {
		return nil, 0, nil // nothing will be written
	}
	return t.w.sym(op, mem.Addr(dest), len(dest)*mem.SizeOf[T]())
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
