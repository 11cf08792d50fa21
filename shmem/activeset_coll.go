package shmem

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The data-moving active-set collectives. They work on bytes, so one body
// serves every element type; the C interface's 32- and 64-bit forms are
// the uint32 and uint64 instances (shmem_broadcast32 is
// BroadcastActiveSet[uint32]).

// asDest checks that dest holds at least n elements and is symmetric, and
// returns its region, the heap or registered static data, and its offset
// there.
func asDest[T Elem](w *World, op string, dest []T, n int) (core.Region, int, error) {
	if len(dest) < n {
		return nil, 0, fmt.Errorf("shmem: %s: dest holds %d elements, %d are needed: %w", op, len(dest), n, core.ErrInvalid)
	}
	if len(dest) == 0 {
		return nil, 0, nil // nothing will be written
	}
	return w.sym(op, mem.Addr(dest), len(dest)*mem.SizeOf[T]())
}

// BroadcastActiveSet copies source on the member of rank root in as into
// dest on every other member (shmem_broadcast32 and shmem_broadcast64).
// root is relative to the set: rank 0 is as.Start. As in OpenSHMEM 1.4,
// the root's own dest is not written. Every member passes the same length
// of source and a symmetric dest holding at least as many elements; pSync
// holds at least BcastSyncSize words.
//
// The data goes down a binomial tree rooted at root: relative rank r hears
// from r minus its lowest set bit and forwards to r+2^j for every 2^j
// below that bit, the largest subtree first, putting the data and then a
// count that announces it.
func BroadcastActiveSet[T Elem](w *World, dest, source []T, root int, as ActiveSet, pSync []int64) error {
	const op = "broadcast"
	c, err := w.begin(op, as, pSync, BcastSyncSize)
	if err != nil {
		return err
	}
	n := c.n
	if root < 0 || root >= n {
		return fmt.Errorf("shmem: %s: root %d is not a rank of the active set (0 to %d): %w", op, root, n-1, core.ErrInvalid)
	}
	dr, off, err := asDest(w, op, dest, len(source))
	if err != nil || len(source) == 0 {
		return err
	}
	rel := (c.me - root + n) % n
	low := n // the root's "lowest bit": it forwards to every subtree
	data := mem.Bytes(source)
	if rel > 0 {
		low = rel & -rel
		if err := c.consume(psBcast, 1); err != nil {
			return wrap(op, err)
		}
		data = mem.Bytes(dest[:len(source)])
	}
	ep := w.coll.ep
	for mask := (1 << bits.Len(uint(n-1))) >> 1; mask > 0; mask >>= 1 {
		if mask >= low || rel+mask >= n {
			continue
		}
		child := (rel + mask + root) % n
		if err := ep.Put(as.PE(child), dr, off, data); err != nil {
			return wrap(op, err)
		}
		if err := ep.Fence(); err != nil {
			return wrap(op, err)
		}
		if err := c.add(child, psBcast, 1); err != nil {
			return wrap(op, err)
		}
	}
	return nil
}

// FCollectActiveSet concatenates the members' source, in rank order, into
// dest on every member (shmem_fcollect32 and shmem_fcollect64). Every
// member passes the same length; dest is symmetric and holds as.Size
// times as many elements; pSync holds at least CollectSyncSize words.
// Every member puts its part straight into every member's dest; in a set
// of up to maxDirect members it then signals each member directly (see
// direct), in a larger one a barrier says all parts have landed.
func FCollectActiveSet[T Elem](w *World, dest, source []T, as ActiveSet, pSync []int64) error {
	const op = "fcollect"
	c, err := w.begin(op, as, pSync, CollectSyncSize)
	if err != nil {
		return err
	}
	m := len(source)
	dr, off, err := asDest(w, op, dest, m*c.n)
	if err != nil || m == 0 {
		return err
	}
	at := off + c.me*m*mem.SizeOf[T]()
	put := func(r int) error {
		if r == c.me {
			// A put completes at the next quiet, which direct does not
			// wait for: this PE's own part is copied, done on return.
			copy(dest[c.me*m:], source)
			return nil
		}
		return w.coll.ep.Put(as.PE(r), dr, at, mem.Bytes(source))
	}
	if c.n <= maxDirect {
		var held [maxDirect]int64
		return wrap(op, c.direct(put, &held))
	}
	return wrap(op, c.spread(put))
}

// CollectActiveSet concatenates the members' source, in rank order, into
// dest on every member (shmem_collect32 and shmem_collect64); unlike
// FCollectActiveSet, each member may contribute a different number of
// elements. dest is symmetric and holds their sum; pSync holds at least
// CollectSyncSize words. In a set of up to maxDirect members each member
// tells the members above it its count and learns where its part goes
// from the counts of those below (see direct); in a larger one, from a
// parallel prefix sum over the set.
func CollectActiveSet[T Elem](w *World, dest, source []T, as ActiveSet, pSync []int64) error {
	const op = "collect"
	c, err := w.begin(op, as, pSync, CollectSyncSize)
	if err != nil {
		return err
	}
	dr, off, err := asDest(w, op, dest, 0)
	if err != nil {
		return err
	}
	var at int64
	var held [maxDirect]int64 // see direct
	direct := c.n <= maxDirect
	if direct {
		at, err = c.countsBelow(int64(len(source)), &held)
	} else {
		at, err = c.prefixSum(int64(len(source)))
	}
	if err != nil {
		return wrap(op, err)
	}
	var bad error
	if at+int64(len(source)) > int64(len(dest)) {
		// Refuse to write past dest, but stay in step with the set.
		bad = fmt.Errorf("shmem: %s: this PE's %d elements go at %d, past the end of dest (%d elements): %w",
			op, len(source), at, len(dest), core.ErrInvalid)
		source = nil
	}
	to := off + int(at)*mem.SizeOf[T]()
	put := func(r int) error {
		if len(source) == 0 {
			return nil
		}
		if r == c.me {
			copy(dest[at:], source) // as in FCollectActiveSet
			return nil
		}
		return w.coll.ep.Put(as.PE(r), dr, to, mem.Bytes(source))
	}
	if direct {
		err = c.direct(put, &held)
	} else {
		err = c.spread(put)
	}
	if bad != nil {
		return bad
	}
	return wrap(op, err)
}

// maxDirect is the largest set whose collect and fcollect signal every
// member directly: one pSync word per member after the barrier's.
const maxDirect = CollectSyncSize - psFrom

// The direct collect and fcollect. Word psFrom+s of a member's pSync
// counts what rank s told it in this call: in a collect, first its count
// of elements plus one (so that zero says "not yet"), sent only to the
// ranks above it, which need it to place their own parts; then, in both,
// dataLanded once its part has been put and fenced. Each word has one
// sender, whose signals a fence keeps in order, so a member waits for no
// one but the senders themselves: one wait for the counts below it and
// one for the parts, where a barrier after quieted puts took a round trip
// and two waits more, each a wake-up of a sleeping PE, which over a
// network is what a collective costs.
//
// The waiting member takes off exactly what this call added. A faster
// member may already be in the next collective on the same pSync, but
// only one call ahead, having received this member's part; its next
// signals to this member come after its current ones and stay in the
// word for that call: a count is below dataLanded, so it never passes for
// one, and a part is never announced before the same sender's part of
// this call. The barrier's words are not used, so a barrier, reduction or
// alltoall on the same pSync right after does not mix with these either.
const dataLanded = 1 << 48

// countsBelow tells the ranks above this PE its count v and returns the
// sum of the counts of the ranks below it; held[s] is what rank s's word
// holds of its count.
func (c *asCall) countsBelow(v int64, held *[maxDirect]int64) (int64, error) {
	for r := c.me + 1; r < c.n; r++ {
		if err := c.add(r, psFrom+c.me, v+1); err != nil {
			return 0, err
		}
	}
	if err := c.waitFrom(0, c.me, func(int) int64 { return 1 }); err != nil {
		return 0, err
	}
	var at int64
	for s := 0; s < c.me; s++ {
		// The sender's part may have landed too: its count is what lies
		// below dataLanded. Nothing of its next call can be here before
		// this PE's part is announced, so it is read now.
		held[s] = atomic.LoadInt64(&c.words[psFrom+s]) % dataLanded
		at += held[s] - 1
	}
	return at, nil
}

// direct runs put towards every other member, starting after this PE so
// that not everyone writes to the same member at once, and into this PE's
// own dest; fences; tells every other member its part has landed; then
// waits until every other member's has landed here and takes this call's
// signals off its words: dataLanded, plus held[s], what the word of rank s
// held before (its count, in a collect).
func (c *asCall) direct(put func(r int) error, held *[maxDirect]int64) error {
	ep := c.w.coll.ep
	var first error
	for i := 0; i < c.n; i++ {
		if err := put((c.me + 1 + i) % c.n); err != nil && first == nil {
			first = err
		}
	}
	if err := ep.Fence(); err != nil {
		return err
	}
	for i := 1; i < c.n; i++ {
		if err := c.add((c.me+i)%c.n, psFrom+c.me, dataLanded); err != nil {
			return err
		}
	}
	for s := 0; s < c.n; s++ {
		held[s] += dataLanded
	}
	if err := c.waitFrom(0, c.n, func(s int) int64 { return held[s] }); err != nil {
		return err
	}
	for s := 0; s < c.n; s++ {
		if s != c.me {
			if err := c.take(psFrom+s, held[s]); err != nil {
				return err
			}
		}
	}
	return first
}

// waitFrom waits until word psFrom+s holds at least need(s) for every rank
// s in [lo, hi) but this PE's: one wait over the words, which checks each
// sender once it is no longer waiting for the one before.
func (c *asCall) waitFrom(lo, hi int, need func(s int) int64) error {
	if lo >= hi || (hi-lo == 1 && lo == c.me) {
		return nil
	}
	s := lo
	return c.w.waitIn(c.syncR, c.word(psFrom+lo), 8*(hi-lo), func() bool {
		for ; s < hi; s++ {
			if s != c.me && atomic.LoadInt64(&c.words[psFrom+s]) < need(s) {
				return false
			}
		}
		return true
	})
}

// prefixSum returns the sum of v over the ranks below this PE's, by the
// dissemination scan of Hillis and Steele: in round k each rank passes its
// running sum to rank me+2^k and adds the one from rank me-2^k. A round's
// word carries the sum plus one, so that zero still says "not yet"; each
// word has one sender per call, and the barrier that ends the collective
// comes after every member has cleared the words it read, so the next
// call finds them at SyncValue.
func (c *asCall) prefixSum(v int64) (int64, error) {
	ep := c.w.coll.ep
	sum := v
	for k := 0; 1<<k < c.n; k++ {
		word := psScan + k
		if to := c.me + 1<<k; to < c.n {
			if err := ep.Atomic(c.as.PE(to), c.syncR, c.word(word), core.AtomicWrite, core.Int64, uint64(sum+1)); err != nil {
				return 0, err
			}
		}
		if c.me >= 1<<k {
			if err := c.waitGE(word, 1); err != nil {
				return 0, err
			}
			// The one sender of this word has written it, so reading it
			// and then clearing it loses nothing.
			sum += atomic.LoadInt64(&c.words[word]) - 1
			if err := ep.Atomic(c.w.me, c.syncR, c.word(word), core.AtomicWrite, core.Int64, uint64(SyncValue)); err != nil {
				return 0, err
			}
		}
	}
	return sum - v, nil
}

// spread runs put towards every member, starting after this PE so that
// not everyone writes to the same member at once, then completes the puts
// and waits for everyone's.
func (c *asCall) spread(put func(r int) error) error {
	var first error
	for i := 0; i < c.n; i++ {
		if err := put((c.me + 1 + i) % c.n); err != nil && first == nil {
			first = err
		}
	}
	if err := c.finish(); err != nil {
		return err
	}
	return first
}

// AlltoallActiveSet sends block j of source, nelems elements at j*nelems,
// to the member of rank j, where it lands in block (this PE's rank) of
// dest (shmem_alltoall32 and shmem_alltoall64). Every member passes the
// same nelems; source holds as.Size*nelems elements and dest, symmetric,
// as many; pSync holds at least AlltoallSyncSize words.
func AlltoallActiveSet[T Elem](w *World, dest, source []T, nelems int, as ActiveSet, pSync []int64) error {
	return alltoalls(w, "alltoall", dest, source, 1, 1, nelems, as, pSync, AlltoallSyncSize)
}

// AlltoallsActiveSet is AlltoallActiveSet with strides (shmem_alltoalls32
// and shmem_alltoalls64): element k of the block for rank j is
// source[(j*nelems+k)*sst] and lands at dest[(me*nelems+k)*dst] on j.
// Strides are at least 1; pSync holds at least AlltoallsSyncSize words.
func AlltoallsActiveSet[T Elem](w *World, dest, source []T, dst, sst, nelems int, as ActiveSet, pSync []int64) error {
	return alltoalls(w, "alltoalls", dest, source, dst, sst, nelems, as, pSync, AlltoallsSyncSize)
}

func alltoalls[T Elem](w *World, op string, dest, source []T, dst, sst, nelems int, as ActiveSet, pSync []int64, words int) error {
	c, err := w.begin(op, as, pSync, words)
	if err != nil {
		return err
	}
	n := c.n
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
	dr, off, err := asDest(w, op, dest, (n*nelems-1)*dst+1)
	if err != nil {
		return err
	}
	size := mem.SizeOf[T]()
	ep := w.coll.ep
	return wrap(op, c.spread(func(to int) error {
		pe := as.PE(to)
		if dst == 1 && sst == 1 {
			return ep.Put(pe, dr, off+c.me*nelems*size, mem.Bytes(source[to*nelems:(to+1)*nelems]))
		}
		for k := 0; k < nelems; k++ {
			i := (to*nelems + k) * sst
			if err := ep.Put(pe, dr, off+(c.me*nelems+k)*dst*size, mem.Bytes(source[i:i+1])); err != nil {
				return err
			}
		}
		return nil
	}))
}
