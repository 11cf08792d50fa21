package main

/*
#include "handles.h"
#include "impl.h"
*/
import "C"

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

// Collectives: the C side has answered SHMEM_TEAM_INVALID and the long
// double reductions; everything else is one call into shmem.

//export gshgo_barrier_all
func gshgo_barrier_all(fn *C.char) { check(fn, theWorld(fn).BarrierAll()) }

//export gshgo_sync_all
func gshgo_sync_all(fn *C.char) { check(fn, theWorld(fn).SyncAll()) }

// symExtent is how many bytes from p on are symmetric, at least n: the
// room collect's dest has, which the call does not say (each PE's part
// is as long as that PE says). It doubles and then bisects on
// AddrAccessible, which only compares addresses.
func symExtent(w *shmem.World, fn *C.char, p unsafe.Pointer, n C.size_t) C.size_t {
	ok := func(k C.size_t) bool { return shmem.AddrAccessible(w, cbytes(fn, p, k), w.MyPE()) }
	if n == 0 {
		n = 1
	}
	if !ok(n) {
		return n // too small already: the collective says so
	}
	lo, hi := n, 2*n
	for ok(hi) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

//export gshgo_broadcast
func gshgo_broadcast(x *C.struct_gsh_team, dest, src unsafe.Pointer, n C.size_t, root C.int, fn *C.char) {
	t := teamOf(x, fn)
	check(fn, shmem.Broadcast(t, cbytes(fn, dest, n), cbytes(fn, src, n), int(root)))
}

//export gshgo_collect
func gshgo_collect(x *C.struct_gsh_team, dest, src unsafe.Pointer, n C.size_t, fn *C.char) {
	t := teamOf(x, fn)
	var d []byte // NULL: no room, for a collect of nothing
	if dest != nil {
		d = cbytes(fn, dest, symExtent(t.World(), fn, dest, n))
	}
	check(fn, shmem.Collect(t, d, cbytes(fn, src, n)))
}

//export gshgo_fcollect
func gshgo_fcollect(x *C.struct_gsh_team, dest, src unsafe.Pointer, n C.size_t, fn *C.char) {
	t := teamOf(x, fn)
	check(fn, shmem.FCollect(t, cbytes(fn, dest, n*C.size_t(t.NPEs())), cbytes(fn, src, n)))
}

//export gshgo_alltoalls
func gshgo_alltoalls(x *C.struct_gsh_team, dest, src unsafe.Pointer, dst, sst C.ptrdiff_t, nelems, esize C.size_t, fn *C.char) {
	t := teamOf(x, fn)
	if nelems == 0 {
		return
	}
	if dst < 1 || sst < 1 {
		failf(fn, "strides %d and %d: strides must be at least 1", int64(dst), int64(sst))
	}
	all := nelems * C.size_t(t.NPEs())
	d := cbytes(fn, dest, ((all-1)*C.size_t(dst)+1)*esize)
	s := cbytes(fn, src, ((all-1)*C.size_t(sst)+1)*esize)
	n := cint(fn, nelems)
	var err error
	switch esize {
	case 1:
		err = shmem.Alltoalls(t, mem.Slice[uint8](d), mem.Slice[uint8](s), int(dst), int(sst), n)
	case 2:
		err = shmem.Alltoalls(t, mem.Slice[uint16](d), mem.Slice[uint16](s), int(dst), int(sst), n)
	case 4:
		err = shmem.Alltoalls(t, mem.Slice[uint32](d), mem.Slice[uint32](s), int(dst), int(sst), n)
	case 8:
		err = shmem.Alltoalls(t, mem.Slice[uint64](d), mem.Slice[uint64](s), int(dst), int(sst), n)
	case 16:
		err = shmem.Alltoalls(t, mem.Slice[complex128](d), mem.Slice[complex128](s), int(dst), int(sst), n)
	default:
		failf(fn, "no alltoalls of %d-byte elements", uint64(esize))
	}
	check(fn, err)
}

// gshgo_reduce reduces nreduce elements of kind and size with op.
//
//export gshgo_reduce
func gshgo_reduce(x *C.struct_gsh_team, dest, src unsafe.Pointer, nreduce C.size_t, op, kind, size C.int, fn *C.char) {
	t := teamOf(x, fn)
	nb := nreduce * C.size_t(size)
	d, s := cbytes(fn, dest, nb), cbytes(fn, src, nb)
	var err error
	switch {
	case kind == C.GSH_INT && size == 1:
		err = reduceInt[int8](t, op, d, s, fn)
	case kind == C.GSH_INT && size == 2:
		err = reduceInt[int16](t, op, d, s, fn)
	case kind == C.GSH_INT && size == 4:
		err = reduceInt[int32](t, op, d, s, fn)
	case kind == C.GSH_INT && size == 8:
		err = reduceInt[int64](t, op, d, s, fn)
	case kind == C.GSH_UINT && size == 1:
		err = reduceInt[uint8](t, op, d, s, fn)
	case kind == C.GSH_UINT && size == 2:
		err = reduceInt[uint16](t, op, d, s, fn)
	case kind == C.GSH_UINT && size == 4:
		err = reduceInt[uint32](t, op, d, s, fn)
	case kind == C.GSH_UINT && size == 8:
		err = reduceInt[uint64](t, op, d, s, fn)
	case kind == C.GSH_FLOAT && size == 4:
		err = reduceFloat[float32](t, op, d, s, fn)
	case kind == C.GSH_FLOAT && size == 8:
		err = reduceFloat[float64](t, op, d, s, fn)
	case kind == C.GSH_COMPLEX && size == 8:
		err = reduceComplex[complex64](t, op, d, s, fn)
	case kind == C.GSH_COMPLEX && size == 16:
		err = reduceComplex[complex128](t, op, d, s, fn)
	default:
		failf(fn, "no reductions of elements of kind %d and size %d", int(kind), int(size))
	}
	check(fn, err)
}

func reduceInt[T shmem.BitwiseElem](t *shmem.Team, op C.int, d, s []byte, fn *C.char) error {
	dt, st := mem.Slice[T](d), mem.Slice[T](s)
	switch op {
	case C.GSH_OP_AND:
		return shmem.AndReduce(t, dt, st)
	case C.GSH_OP_OR:
		return shmem.OrReduce(t, dt, st)
	case C.GSH_OP_XOR:
		return shmem.XorReduce(t, dt, st)
	}
	return reduceFloat[T](t, op, d, s, fn)
}

func reduceFloat[T shmem.OrderedElem](t *shmem.Team, op C.int, d, s []byte, fn *C.char) error {
	dt, st := mem.Slice[T](d), mem.Slice[T](s)
	switch op {
	case C.GSH_OP_MAX:
		return shmem.MaxReduce(t, dt, st)
	case C.GSH_OP_MIN:
		return shmem.MinReduce(t, dt, st)
	}
	return reduceComplex[T](t, op, d, s, fn)
}

func reduceComplex[T shmem.ArithElem](t *shmem.Team, op C.int, d, s []byte, fn *C.char) error {
	dt, st := mem.Slice[T](d), mem.Slice[T](s)
	switch op {
	case C.GSH_OP_SUM:
		return shmem.SumReduce(t, dt, st)
	case C.GSH_OP_PROD:
		return shmem.ProdReduce(t, dt, st)
	}
	failf(fn, "reduction operator %d is not defined for this type", int(op))
	return nil
}

// The 1.4 active-set collectives, over shmem's ActiveSet forms.

// Programs size pSync and pWrk by shmem.h's constants, and shmem uses as
// many words as its own say: the header's must be at least as large, or
// shmem would use memory past the program's arrays. A negative
// difference fails the build.
const (
	_ = uint(C.SHMEM_BARRIER_SYNC_SIZE - shmem.BarrierSyncSize)
	_ = uint(C.SHMEM_BCAST_SYNC_SIZE - shmem.BcastSyncSize)
	_ = uint(C.SHMEM_COLLECT_SYNC_SIZE - shmem.CollectSyncSize)
	_ = uint(C.SHMEM_REDUCE_SYNC_SIZE - shmem.ReduceSyncSize)
	_ = uint(C.SHMEM_ALLTOALL_SYNC_SIZE - shmem.AlltoallSyncSize)
	_ = uint(C.SHMEM_ALLTOALLS_SYNC_SIZE - shmem.AlltoallsSyncSize)
	_ = uint(C.SHMEM_SYNC_SIZE - shmem.SyncSize)
	_ = uint(C.SHMEM_REDUCE_MIN_WRKDATA_SIZE - shmem.ReduceMinWrkdataSize)
	_ = uint(C.SHMEM_SYNC_VALUE-shmem.SyncValue) + uint(shmem.SyncValue-C.SHMEM_SYNC_VALUE)
)

func activeSet(start, logStride, size C.int) shmem.ActiveSet {
	return shmem.ActiveSet{Start: int(start), LogStride: int(logStride), Size: int(size)}
}

// pSync views the program's pSync array of words longs.
func pSync(fn *C.char, p *C.long, words int) []int64 {
	return mem.Slice[int64](cbytes(fn, unsafe.Pointer(p), C.size_t(8*words)))
}

//export gshgo_barrier_as
func gshgo_barrier_as(start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	check(fn, w.BarrierActiveSet(activeSet(start, logStride, size), pSync(fn, ps, C.SHMEM_BARRIER_SYNC_SIZE)))
}

//export gshgo_broadcast_as
func gshgo_broadcast_as(dest, src unsafe.Pointer, n C.size_t, root, start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	check(fn, shmem.BroadcastActiveSet(w, cbytes(fn, dest, n), cbytes(fn, src, n), int(root),
		activeSet(start, logStride, size), pSync(fn, ps, C.SHMEM_BCAST_SYNC_SIZE)))
}

//export gshgo_collect_as
func gshgo_collect_as(dest, src unsafe.Pointer, n C.size_t, start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	var d []byte // NULL: no room, for a collect of nothing
	if dest != nil {
		d = cbytes(fn, dest, symExtent(w, fn, dest, n))
	}
	check(fn, shmem.CollectActiveSet(w, d, cbytes(fn, src, n), activeSet(start, logStride, size), pSync(fn, ps, C.SHMEM_COLLECT_SYNC_SIZE)))
}

//export gshgo_fcollect_as
func gshgo_fcollect_as(dest, src unsafe.Pointer, n C.size_t, start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	if size < 1 {
		size = 1 // the set check reports it
	}
	check(fn, shmem.FCollectActiveSet(w, cbytes(fn, dest, n*C.size_t(size)), cbytes(fn, src, n),
		activeSet(start, logStride, size), pSync(fn, ps, C.SHMEM_COLLECT_SYNC_SIZE)))
}

//export gshgo_alltoalls_as
func gshgo_alltoalls_as(dest, src unsafe.Pointer, dst, sst C.ptrdiff_t, nelems, esize C.size_t, start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	if nelems == 0 {
		return
	}
	if dst < 1 || sst < 1 || size < 1 {
		failf(fn, "strides %d and %d, active set size %d: each must be at least 1", int64(dst), int64(sst), int(size))
	}
	as := activeSet(start, logStride, size)
	all := nelems * C.size_t(size)
	d := cbytes(fn, dest, ((all-1)*C.size_t(dst)+1)*esize)
	s := cbytes(fn, src, ((all-1)*C.size_t(sst)+1)*esize)
	n := cint(fn, nelems)
	sync := pSync(fn, ps, C.SHMEM_ALLTOALLS_SYNC_SIZE)
	var err error
	switch esize {
	case 1:
		err = shmem.AlltoallsActiveSet(w, mem.Slice[uint8](d), mem.Slice[uint8](s), int(dst), int(sst), n, as, sync)
	case 2:
		err = shmem.AlltoallsActiveSet(w, mem.Slice[uint16](d), mem.Slice[uint16](s), int(dst), int(sst), n, as, sync)
	case 4:
		err = shmem.AlltoallsActiveSet(w, mem.Slice[uint32](d), mem.Slice[uint32](s), int(dst), int(sst), n, as, sync)
	case 8:
		err = shmem.AlltoallsActiveSet(w, mem.Slice[uint64](d), mem.Slice[uint64](s), int(dst), int(sst), n, as, sync)
	case 16:
		err = shmem.AlltoallsActiveSet(w, mem.Slice[complex128](d), mem.Slice[complex128](s), int(dst), int(sst), n, as, sync)
	default:
		failf(fn, "no alltoalls of %d-byte elements", uint64(esize))
	}
	check(fn, err)
}

//export gshgo_alltoall_as
func gshgo_alltoall_as(dest, src unsafe.Pointer, n C.size_t, start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	if size < 1 {
		size = 1 // the set check reports it
	}
	all := n * C.size_t(size)
	check(fn, shmem.AlltoallActiveSet(w, cbytes(fn, dest, all), cbytes(fn, src, all), cint(fn, n),
		activeSet(start, logStride, size), pSync(fn, ps, C.SHMEM_ALLTOALL_SYNC_SIZE)))
}

// gshgo_reduce_as is the active-set reductions (shmem_TYPE_OP_to_all):
// pWrk is viewed as long as shmem uses it for nreduce elements.
//
//export gshgo_reduce_as
func gshgo_reduce_as(dest, src unsafe.Pointer, nreduce, op, kind, size, start, logStride, psize C.int, pWrk unsafe.Pointer, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	if nreduce < 0 {
		failf(fn, "nreduce %d is negative", int(nreduce))
	}
	a := toAll{w: w, fn: fn, as: activeSet(start, logStride, psize), pSync: pSync(fn, ps, C.SHMEM_REDUCE_SYNC_SIZE),
		dest: dest, src: src, wrk: pWrk, n: int(nreduce), op: op}
	var err error
	switch {
	case kind == C.GSH_INT && size == 2:
		err = toAllInt[int16](a)
	case kind == C.GSH_INT && size == 4:
		err = toAllInt[int32](a)
	case kind == C.GSH_INT && size == 8:
		err = toAllInt[int64](a)
	case kind == C.GSH_UINT && size == 2:
		err = toAllInt[uint16](a)
	case kind == C.GSH_UINT && size == 4:
		err = toAllInt[uint32](a)
	case kind == C.GSH_UINT && size == 8:
		err = toAllInt[uint64](a)
	case kind == C.GSH_FLOAT && size == 4:
		err = toAllOrdered[float32](a)
	case kind == C.GSH_FLOAT && size == 8:
		err = toAllOrdered[float64](a)
	case kind == C.GSH_COMPLEX && size == 8:
		err = toAllArith[complex64](a)
	case kind == C.GSH_COMPLEX && size == 16:
		err = toAllArith[complex128](a)
	default:
		failf(fn, "no reductions of elements of kind %d and size %d", int(kind), int(size))
	}
	check(fn, err)
}

// toAll is an active-set reduction's arguments.
type toAll struct {
	w              *shmem.World
	fn             *C.char
	as             shmem.ActiveSet
	pSync          []int64
	dest, src, wrk unsafe.Pointer
	n              int
	op             C.int
}

// views returns dest, source and pWrk as slices of T.
func views[T shmem.Elem](a toAll) (d, s, wrk []T) {
	size := C.size_t(mem.SizeOf[T]())
	n := C.size_t(a.n)
	return mem.Slice[T](cbytes(a.fn, a.dest, n*size)), mem.Slice[T](cbytes(a.fn, a.src, n*size)),
		mem.Slice[T](cbytes(a.fn, a.wrk, C.size_t(shmem.ReduceWorkSize(a.n))*size))
}

func toAllInt[T shmem.BitwiseElem](a toAll) error {
	d, s, wrk := views[T](a)
	switch a.op {
	case C.GSH_OP_AND:
		return shmem.AndToAll(a.w, d, s, a.as, wrk, a.pSync)
	case C.GSH_OP_OR:
		return shmem.OrToAll(a.w, d, s, a.as, wrk, a.pSync)
	case C.GSH_OP_XOR:
		return shmem.XorToAll(a.w, d, s, a.as, wrk, a.pSync)
	}
	return toAllOrdered[T](a)
}

func toAllOrdered[T shmem.OrderedElem](a toAll) error {
	d, s, wrk := views[T](a)
	switch a.op {
	case C.GSH_OP_MAX:
		return shmem.MaxToAll(a.w, d, s, a.as, wrk, a.pSync)
	case C.GSH_OP_MIN:
		return shmem.MinToAll(a.w, d, s, a.as, wrk, a.pSync)
	}
	return toAllArith[T](a)
}

func toAllArith[T shmem.ArithElem](a toAll) error {
	d, s, wrk := views[T](a)
	switch a.op {
	case C.GSH_OP_SUM:
		return shmem.SumToAll(a.w, d, s, a.as, wrk, a.pSync)
	case C.GSH_OP_PROD:
		return shmem.ProdToAll(a.w, d, s, a.as, wrk, a.pSync)
	}
	failf(a.fn, "reduction operator %d is not defined for this type", int(a.op))
	return nil
}

// gshgo_pcontrol is shmem_pcontrol.
//
//export gshgo_pcontrol
func gshgo_pcontrol(level C.int, fn *C.char) {
	theWorld(fn).PControl(int(level))
}
