package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The active-set collectives are OpenSHMEM 1.4's collectives, deprecated in
// 1.5 but still part of it: instead of a team they name their PEs by an
// ActiveSet, and instead of internal state they synchronise through pSync,
// a symmetric array of int64 the program provides, and reduce through
// pWrk, a symmetric work array. They exist so that programs written for
// 1.4, and a C interface over this package, can run unchanged; new code
// should use teams.
//
// Each runs the team collectives' algorithms on a group whose words are
// pSync's (coll_group.go, docs/collectives.md): every word is a counter
// that the receiver takes what it waited for off again, so a barrier may be
// called back to back with the same pSync, and every word a call consumes
// on a PE is back at SyncValue when the call returns there; signals of a
// later call by a faster member may already have arrived. A set of every
// PE runs on the World's team where the team form means the same.
//
// As the spec requires, pSync must hold SyncValue in every word on every
// member before its first use, and a pSync used by one collective may be
// used by the next only after every member has left the previous one: the
// collectives that end with a barrier (barrier, collect, fcollect,
// alltoall(s)) and the reductions guarantee that themselves; after a
// broadcast, the program synchronises before reusing its pSync or dest,
// for instance with a barrier on a second pSync, as 1.4 programs do.
// Broadcast, collect and alltoall may write a member's dest as soon as any
// member has entered the call, so a dest a member may still be reading
// must not be the target of the next collective before a synchronisation.

// SyncValue is the value every word of a pSync array holds between
// collectives (SHMEM_SYNC_VALUE).
const SyncValue int64 = 0

// The number of pSync words each active-set collective needs: a pSync
// array holds at least this many int64 (SHMEM_*_SYNC_SIZE). SyncSize is
// the largest, enough for any of them.
const (
	// BarrierSyncSize: the arrival and release counters of the tree.
	BarrierSyncSize = 2
	// BcastSyncSize: the counter that says the data has arrived.
	BcastSyncSize = 1
	// CollectSyncSize (collect and fcollect): the barrier's counters, then
	// one word per member for sets of up to maxDirect members, where each
	// member signals the others directly (group.direct); larger sets use
	// the barrier and one word per round of a scan. It is
	// SHMEM_COLLECT_SYNC_SIZE, which C programs allocate anyway.
	CollectSyncSize = 64
	// ReduceSyncSize: the arrival and release counters of the tree.
	ReduceSyncSize = 2
	// AlltoallSyncSize and AlltoallsSyncSize: as CollectSyncSize, the
	// alltoalls being gathers of a block from every member.
	AlltoallSyncSize  = CollectSyncSize
	AlltoallsSyncSize = CollectSyncSize

	SyncSize = max(BarrierSyncSize, BcastSyncSize, CollectSyncSize, ReduceSyncSize, AlltoallSyncSize, AlltoallsSyncSize)

	// ReduceMinWrkdataSize is the least number of elements the spec has a
	// pWrk array hold (SHMEM_REDUCE_MIN_WRKDATA_SIZE); the spec asks
	// max(nreduce/2+1, ReduceMinWrkdataSize) of a reduction of nreduce,
	// and this library uses none.
	ReduceMinWrkdataSize = 64
)

// Where a group's words lie in pSync (psIndex): the tree's arrivals and
// releases in words 0 and 1 (the broadcast's data, and dissemination's
// one round on a set of two, in word 0); after them the prefix sum's
// rounds, or in the direct gathers one word per sender rank.
const (
	psScan = BarrierSyncSize
	psFrom = BarrierSyncSize
)

// ActiveSet names the PEs of an active-set collective: Size PEs, from
// Start, every 2^LogStride (PE_start, logPE_stride and PE_size in C). A
// member's rank in the set is its position in that sequence.
type ActiveSet struct {
	Start, LogStride, Size int
}

// PE returns the World PE of rank r of the set.
func (as ActiveSet) PE(r int) int { return as.Start + r<<as.LogStride }

// Rank returns the rank in the set of World PE pe, or -1 if it is not a
// member.
func (as ActiveSet) Rank(pe int) int {
	d := pe - as.Start
	switch {
	case d < 0 || as.LogStride < 0 || as.Size < 1:
		return -1
	case d == 0:
		return 0
	case as.LogStride > 62 || d&(1<<as.LogStride-1) != 0:
		return -1
	}
	if r := d >> as.LogStride; r < as.Size {
		return r
	}
	return -1
}

// check validates the set on a World of npes PEs, with PE me calling.
func (as ActiveSet) check(op string, npes, me int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("shmem: %s: active set (start %d, log stride %d, size %d): %s: %w",
			op, as.Start, as.LogStride, as.Size, fmt.Sprintf(format, args...), core.ErrInvalid)
	}
	switch {
	case as.Size < 1:
		return bad("size must be at least 1")
	case as.LogStride < 0:
		return bad("log stride must not be negative")
	case as.Start < 0 || as.Start >= npes:
		return bad("start is not a PE (0 to %d)", npes-1)
	case as.LogStride > 62 && as.Size > 1, as.Size-1 > (npes-1-as.Start)>>as.LogStride:
		return bad("its last member is past the last PE %d", npes-1)
	case as.Rank(me) < 0:
		return bad("the calling PE %d is not a member", me)
	}
	return nil
}

// activeGroup validates the set and pSync (at least words int64,
// symmetric, aligned) and returns the call's group, whose words are
// pSync's. Where the set is the World's every PE, it also returns the
// World's team, on which the collectives whose team form means the same
// run instead, with the team's strategies; pSync is then not written.
func (w *World) activeGroup(op string, as ActiveSet, pSync []int64, words int) (group, *Team, error) {
	if err := w.Err(); err != nil {
		return group{}, nil, err
	}
	if err := as.check(op, w.npes, w.me); err != nil {
		return group{}, nil, err
	}
	if len(pSync) < words {
		return group{}, nil, fmt.Errorf("shmem: %s: pSync holds %d words, %d are needed: %w", op, len(pSync), words, core.ErrInvalid)
	}
	r, off, err := w.sym(op, mem.Addr(pSync), words*8)
	if err != nil {
		// Name the array only here: building the name allocates.
		return group{}, nil, w.addrError(op+" pSync", mem.Addr(pSync), words*8)
	}
	if off%8 != 0 {
		return group{}, nil, fmt.Errorf("shmem: %s: pSync is not aligned to 8 bytes: %w", op, core.ErrInvalid)
	}
	g := group{w: w, n: as.Size, me: as.Rank(w.me), as: as, op: op, syncR: r, sync: off, local: mem.Bytes(pSync[:words])}
	var world *Team
	if as.Start == 0 && as.Size == w.npes && (as.LogStride == 0 || as.Size == 1) {
		world = w.coll.world
		world.op = op
	}
	return g, world, nil
}

// BarrierActiveSet completes this PE's outstanding operations on the
// default context and waits until every member of as has called it
// (shmem_barrier). pSync holds at least BarrierSyncSize words; the same
// pSync may serve consecutive barriers over the same set.
func (w *World) BarrierActiveSet(as ActiveSet, pSync []int64) error {
	const op = "barrier"
	g, world, err := w.activeGroup(op, as, pSync, BarrierSyncSize)
	if err != nil {
		return err
	}
	if err := w.def.ep.Quiet(); err != nil {
		return wrap(op, err)
	}
	if world != nil {
		return world.collErr(op, world.barrier())
	}
	return wrap(op, w.exitOr(g.barrier()))
}

// BroadcastActiveSet copies source on the member of rank root in as into
// dest on every other member (shmem_broadcast32 and shmem_broadcast64).
// root is relative to the set: rank 0 is as.Start. As in OpenSHMEM 1.4,
// the root's own dest is not written. Every member passes the same length
// of source and a symmetric dest holding at least as many elements; pSync
// holds at least BcastSyncSize words.
//
// The data goes straight into dest: from the root to every member where
// the members map each other (group.push), else down the group's
// binomial tree rooted at root, a member forwarding as soon as it has the
// data; so the program synchronises before reusing dest or pSync.
func BroadcastActiveSet[T Elem](w *World, dest, source []T, root int, as ActiveSet, pSync []int64) error {
	const op = "broadcast"
	g, _, err := w.activeGroup(op, as, pSync, BcastSyncSize)
	if err != nil {
		return err
	}
	n := g.n
	if root < 0 || root >= n {
		return fmt.Errorf("shmem: %s: root %d is not a rank of the active set (0 to %d): %w", op, root, n-1, core.ErrInvalid)
	}
	dr, off, err := symIn(w, op, dest, len(source))
	if err != nil || len(source) == 0 {
		return err
	}
	if g.pushFits(len(source) * mem.SizeOf[T]()) {
		b := mem.Bytes(dest[:len(source)])
		return wrap(op, w.exitOr(g.push(root, gwData, b, mem.Bytes(source), dr, off, false)))
	}
	rel := (g.me - root + n) % n
	data := mem.Bytes(source)
	if rel > 0 {
		if err := g.await(gwData, 1); err != nil {
			return wrap(op, w.exitOr(err))
		}
		data = mem.Bytes(dest[:len(source)])
	}
	return wrap(op, w.exitOr(g.binomialSend(overTeam, rel, n, root, data, dr, off)))
}

// FCollectActiveSet concatenates the members' source, in rank order, into
// dest on every member (shmem_fcollect32 and shmem_fcollect64). Every
// member passes the same length; dest is symmetric and holds as.Size
// times as many elements; pSync holds at least CollectSyncSize words.
func FCollectActiveSet[T Elem](w *World, dest, source []T, as ActiveSet, pSync []int64) error {
	const op = "fcollect"
	g, world, err := w.activeGroup(op, as, pSync, CollectSyncSize)
	if err != nil {
		return err
	}
	if world != nil {
		return FCollect(world, dest, source)
	}
	m := len(source)
	dr, off, err := symIn(w, op, dest, m*g.n)
	if err != nil || m == 0 {
		return err
	}
	return wrap(op, w.exitOr(fcollect(&g, dest, source, dr, off)))
}

// CollectActiveSet concatenates the members' source, in rank order, into
// dest on every member (shmem_collect32 and shmem_collect64); unlike
// FCollectActiveSet, each member may contribute a different number of
// elements. dest is symmetric and holds their sum; pSync holds at least
// CollectSyncSize words.
func CollectActiveSet[T Elem](w *World, dest, source []T, as ActiveSet, pSync []int64) error {
	const op = "collect"
	g, world, err := w.activeGroup(op, as, pSync, CollectSyncSize)
	if err != nil {
		return err
	}
	if world != nil {
		return Collect(world, dest, source)
	}
	dr, off, err := symIn(w, op, dest, 0)
	if err != nil {
		return err
	}
	return collect(&g, op, dest, source, dr, off)
}

// maxDirect is the largest group whose collect and fcollect signal every
// member directly: one pSync word per member after the tree's two.
const maxDirect = CollectSyncSize - psFrom

// AlltoallActiveSet sends block j of source, nelems elements at j*nelems,
// to the member of rank j, where it lands in block (this PE's rank) of
// dest (shmem_alltoall32 and shmem_alltoall64). Every member passes the
// same nelems; source holds as.Size*nelems elements and dest, symmetric,
// as many; pSync holds at least AlltoallSyncSize words.
func AlltoallActiveSet[T Elem](w *World, dest, source []T, nelems int, as ActiveSet, pSync []int64) error {
	return alltoallsAS(w, "alltoall", mem.Bytes(dest), mem.Bytes(source), mem.SizeOf[T](), 1, 1, nelems, as, pSync, AlltoallSyncSize)
}

// AlltoallsActiveSet is AlltoallActiveSet with strides (shmem_alltoalls32
// and shmem_alltoalls64): element k of the block for rank j is
// source[(j*nelems+k)*sst] and lands at dest[(me*nelems+k)*dst] on j.
// Strides are at least 1; pSync holds at least AlltoallsSyncSize words.
func AlltoallsActiveSet[T Elem](w *World, dest, source []T, dst, sst, nelems int, as ActiveSet, pSync []int64) error {
	return AlltoallsBytesActiveSet(w, mem.Bytes(dest), mem.Bytes(source), mem.SizeOf[T](), dst, sst, nelems, as, pSync)
}

// AlltoallsBytesActiveSet is AlltoallsActiveSet of elements of esize
// bytes held as bytes (see AlltoallsBytes).
func AlltoallsBytesActiveSet(w *World, dest, source []byte, esize, dst, sst, nelems int, as ActiveSet, pSync []int64) error {
	return alltoallsAS(w, "alltoalls", dest, source, esize, dst, sst, nelems, as, pSync, AlltoallsSyncSize)
}

func alltoallsAS(w *World, op string, dest, source []byte, esize, dst, sst, nelems int, as ActiveSet, pSync []int64, words int) error {
	g, world, err := w.activeGroup(op, as, pSync, words)
	if err != nil {
		return err
	}
	if world != nil {
		return AlltoallsBytes(world, dest, source, esize, dst, sst, nelems)
	}
	return wrap(op, w.exitOr(alltoalls(&g, op, dest, source, esize, dst, sst, nelems)))
}

// The active-set reductions (shmem_TYPENAME_OP_to_all): dest[i], on every
// member of as, becomes the reduction of source[i] over the members, for
// len(source) elements. dest is symmetric, holds at least as many and may
// be source itself; pSync holds at least ReduceSyncSize words. Every
// member passes the same length, and every member gets the same bits,
// floating-point sums included.
//
// pWrk is the work array 1.4 programs pass: symmetric, or empty. It is
// never read or written: the reduction goes through the library's own
// scratch, so a pWrk smaller than the spec asks (programs in the wild pass
// ReduceMinWrkdataSize elements whatever they reduce) is no hazard.

// AndToAll is the bitwise and (shmem_TYPENAME_and_to_all).
func AndToAll[T BitwiseElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return ReduceWithActiveSet(w, "and_to_all", dest, source, as, pWrk, pSync, andOf[T])
}

// OrToAll is the bitwise or (shmem_TYPENAME_or_to_all).
func OrToAll[T BitwiseElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return ReduceWithActiveSet(w, "or_to_all", dest, source, as, pWrk, pSync, orOf[T])
}

// XorToAll is the bitwise exclusive or (shmem_TYPENAME_xor_to_all).
func XorToAll[T BitwiseElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return ReduceWithActiveSet(w, "xor_to_all", dest, source, as, pWrk, pSync, xorOf[T])
}

// MaxToAll is the maximum (shmem_TYPENAME_max_to_all).
func MaxToAll[T OrderedElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return ReduceWithActiveSet(w, "max_to_all", dest, source, as, pWrk, pSync, maxOf[T])
}

// MinToAll is the minimum (shmem_TYPENAME_min_to_all).
func MinToAll[T OrderedElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return ReduceWithActiveSet(w, "min_to_all", dest, source, as, pWrk, pSync, minOf[T])
}

// SumToAll is the sum (shmem_TYPENAME_sum_to_all), complex types included.
func SumToAll[T ArithElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return ReduceWithActiveSet(w, "sum_to_all", dest, source, as, pWrk, pSync, sumOf[T])
}

// ProdToAll is the product (shmem_TYPENAME_prod_to_all), complex types
// included.
func ProdToAll[T ArithElem](w *World, dest, source []T, as ActiveSet, pWrk []T, pSync []int64) error {
	return ReduceWithActiveSet(w, "prod_to_all", dest, source, as, pWrk, pSync, prodOf[T])
}

// ReduceWorkSize is the number of pWrk elements the spec asks a reduction
// of nreduce elements to pass: max(nreduce/2+1, ReduceMinWrkdataSize).
// This library uses none of them.
func ReduceWorkSize(nreduce int) int { return max(nreduce/2+1, ReduceMinWrkdataSize) }

// ReduceWithActiveSet is the active-set reduction that combine performs
// (pWrk as the typed forms take it),
// for operators and types the typed forms do not name (C's long double,
// carried as 16-byte elements): it reduces up the group's combining tree
// and sends the result back down, a chunk of the scratch's size at a
// time. op names the routine in errors.
func ReduceWithActiveSet[T Elem](w *World, op string, dest, source []T, as ActiveSet, pWrk []T, pSync []int64, combine func(acc, in []T)) error {
	g, world, err := w.activeGroup(op, as, pSync, ReduceSyncSize)
	if err != nil {
		return err
	}
	if n := len(pWrk) * mem.SizeOf[T](); n > 0 {
		if _, _, err := w.sym(op, mem.Addr(pWrk), n); err != nil {
			return w.addrError(op+" pWrk", mem.Addr(pWrk), n)
		}
	}
	nred := len(source)
	if err := checkReduce(op, dest, source); err != nil {
		return err
	}
	// dest must be symmetric in every form, though the World's team
	// reduces through its own areas.
	if _, _, err := symIn(w, op, dest, nred); err != nil || nred == 0 {
		return err
	}
	if world != nil {
		return reduce(world, op, dest, source, combine)
	}
	acc := dest[:nred]
	copy(acc, source)
	per := max(1, g.chunk()/mem.SizeOf[T]())
	for lo := 0; lo < nred; lo += per {
		if err := tree(&g, 0, acc[lo:min(lo+per, nred)], combine, true); err != nil {
			return wrap(op, w.exitOr(err))
		}
	}
	return nil
}

// checkReduce refuses a dest shorter than source, and a dest and source
// that overlap without being the same array.
func checkReduce[T Elem](op string, dest, source []T) error {
	if len(dest) < len(source) {
		return fmt.Errorf("shmem: %s of %d elements: dest holds only %d: %w", op, len(source), len(dest), core.ErrInvalid)
	}
	if len(source) > 0 && &source[0] != &dest[0] && overlap(mem.Bytes(dest[:len(source)]), mem.Bytes(source)) {
		return fmt.Errorf("shmem: %s: dest and source overlap without being the same array: %w", op, core.ErrInvalid)
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
