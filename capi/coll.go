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
// is as long as that PE says).
func symExtent(w *shmem.World, p unsafe.Pointer, n C.size_t) C.size_t {
	return max(n, C.size_t(w.SymmetricExtent(uintptr(p))))
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
		d = cbytes(fn, dest, symExtent(t.World(), dest, n))
	}
	check(fn, shmem.Collect(t, d, cbytes(fn, src, n)))
}

//export gshgo_fcollect
func gshgo_fcollect(x *C.struct_gsh_team, dest, src unsafe.Pointer, n C.size_t, fn *C.char) {
	t := teamOf(x, fn)
	check(fn, shmem.FCollect(t, cbytes(fn, dest, cmul(fn, n, C.size_t(t.NPEs()))), cbytes(fn, src, n)))
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
	all := cmul(fn, nelems, C.size_t(t.NPEs()))
	d := cbytes(fn, dest, cmul(fn, cmul(fn, all-1, C.size_t(dst))+1, esize))
	s := cbytes(fn, src, cmul(fn, cmul(fn, all-1, C.size_t(sst))+1, esize))
	check(fn, shmem.AlltoallsBytes(t, d, s, int(esize), int(dst), int(sst), cint(fn, nelems)))
}

// gshgo_reduce reduces nreduce elements of kind and size with op.
//
//export gshgo_reduce
func gshgo_reduce(x *C.struct_gsh_team, dest, src unsafe.Pointer, nreduce C.size_t, op, kind, size C.int, fn *C.char) {
	t := teamOf(x, fn)
	nb := cmul(fn, nreduce, C.size_t(size))
	check(fn, reduceKind(reduceForm{t: t, name: "reduce"}, op, kind, size, cbytes(fn, dest, nb), cbytes(fn, src, nb), fn))
}

// gshgo_scan is the sum scans, inclusive or exclusive, of nelems
// elements of kind and size: shmem's scan with the sum of the reduction
// table.
//
//export gshgo_scan
func gshgo_scan(x *C.struct_gsh_team, dest, src unsafe.Pointer, nelems C.size_t, exclusive, kind, size C.int, fn *C.char) {
	t := teamOf(x, fn)
	nb := cmul(fn, nelems, C.size_t(size))
	f := reduceForm{t: t, name: "sum_inscan", scan: true}
	if exclusive != 0 {
		f.name, f.exclusive = "sum_exscan", true
	}
	check(fn, reduceKind(f, C.GSH_OP_SUM, kind, size, cbytes(fn, dest, nb), cbytes(fn, src, nb), fn))
}

// reduceForm is where a C reduction runs: on a team, or on an active set
// (pSync and the set); or, with scan, a team's scan.
type reduceForm struct {
	scan      bool
	exclusive bool
	t         *shmem.Team
	w         *shmem.World
	as        shmem.ActiveSet
	pSync     []int64
	pWrk      unsafe.Pointer // an active set's: checked, never used
	name      string
}

// The C operators are shmem's, in the same order.
const (
	_ = uint(C.GSH_OP_AND-C.int(shmem.ReduceAnd)) + uint(C.int(shmem.ReduceAnd)-C.GSH_OP_AND)
	_ = uint(C.GSH_OP_PROD-C.int(shmem.ReduceProd)) + uint(C.int(shmem.ReduceProd)-C.GSH_OP_PROD)
)

// reduceKind runs a reduction of elements of kind and size: the one place
// a C reduction turns into a Go element type, for every form. long
// double, which Go has no type for, travels as 16-byte elements and is
// combined in C.
func reduceKind(f reduceForm, op, kind, size C.int, d, s []byte, fn *C.char) error {
	switch {
	case kind == C.GSH_INT && size == 1:
		return reduceAs[int8](f, op, d, s, fn)
	case kind == C.GSH_INT && size == 2:
		return reduceAs[int16](f, op, d, s, fn)
	case kind == C.GSH_INT && size == 4:
		return reduceAs[int32](f, op, d, s, fn)
	case kind == C.GSH_INT && size == 8:
		return reduceAs[int64](f, op, d, s, fn)
	case kind == C.GSH_UINT && size == 1:
		return reduceAs[uint8](f, op, d, s, fn)
	case kind == C.GSH_UINT && size == 2:
		return reduceAs[uint16](f, op, d, s, fn)
	case kind == C.GSH_UINT && size == 4:
		return reduceAs[uint32](f, op, d, s, fn)
	case kind == C.GSH_UINT && size == 8:
		return reduceAs[uint64](f, op, d, s, fn)
	case kind == C.GSH_FLOAT && size == 4:
		return reduceAs[float32](f, op, d, s, fn)
	case kind == C.GSH_FLOAT && size == 8:
		return reduceAs[float64](f, op, d, s, fn)
	case kind == C.GSH_FLOAT && size == 16:
		switch op {
		case C.GSH_OP_MAX, C.GSH_OP_MIN, C.GSH_OP_SUM, C.GSH_OP_PROD:
		default:
			failf(fn, "reduction operator %s is not defined for long double", shmem.ReduceOp(op))
		}
		return reduceRun(f, mem.Slice[complex128](d), mem.Slice[complex128](s), func(acc, in []complex128) {
			if len(acc) > 0 {
				C.gsh_combine_ld(unsafe.Pointer(&acc[0]), unsafe.Pointer(&in[0]), C.size_t(len(acc)), op)
			}
		})
	case kind == C.GSH_COMPLEX && size == 8:
		return reduceAs[complex64](f, op, d, s, fn)
	case kind == C.GSH_COMPLEX && size == 16:
		return reduceAs[complex128](f, op, d, s, fn)
	}
	failf(fn, "no reductions of elements of kind %d and size %d", int(kind), int(size))
	return nil
}

// reduceAs runs the reduction with op from shmem's table for T.
func reduceAs[T shmem.Elem](f reduceForm, op C.int, d, s []byte, fn *C.char) error {
	combine, ok := shmem.Combiner[T](shmem.ReduceOp(op))
	if !ok {
		failf(fn, "reduction operator %s is not defined for this type", shmem.ReduceOp(op))
	}
	return reduceRun(f, mem.Slice[T](d), mem.Slice[T](s), combine)
}

func reduceRun[T shmem.Elem](f reduceForm, d, s []T, combine func(acc, in []T)) error {
	if f.scan {
		return shmem.ScanWith(f.t, f.name, d, s, f.exclusive, combine)
	}
	if f.t != nil {
		return shmem.ReduceWith(f.t, f.name, d, s, combine)
	}
	var wrk []T // one element: enough to say whether pWrk is symmetric
	if f.pWrk != nil {
		wrk = unsafe.Slice((*T)(f.pWrk), 1)
	}
	return shmem.ReduceWithActiveSet(f.w, f.name, d, s, f.as, wrk, f.pSync, combine)
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
		d = cbytes(fn, dest, symExtent(w, dest, n))
	}
	check(fn, shmem.CollectActiveSet(w, d, cbytes(fn, src, n), activeSet(start, logStride, size), pSync(fn, ps, C.SHMEM_COLLECT_SYNC_SIZE)))
}

//export gshgo_fcollect_as
func gshgo_fcollect_as(dest, src unsafe.Pointer, n C.size_t, start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	if size < 1 {
		size = 1 // the set check reports it
	}
	check(fn, shmem.FCollectActiveSet(w, cbytes(fn, dest, cmul(fn, n, C.size_t(size))), cbytes(fn, src, n),
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
	all := cmul(fn, nelems, C.size_t(size))
	d := cbytes(fn, dest, cmul(fn, cmul(fn, all-1, C.size_t(dst))+1, esize))
	s := cbytes(fn, src, cmul(fn, cmul(fn, all-1, C.size_t(sst))+1, esize))
	sync := pSync(fn, ps, C.SHMEM_ALLTOALLS_SYNC_SIZE)
	check(fn, shmem.AlltoallsBytesActiveSet(w, d, s, int(esize), int(dst), int(sst), cint(fn, nelems), as, sync))
}

//export gshgo_alltoall_as
func gshgo_alltoall_as(dest, src unsafe.Pointer, n C.size_t, start, logStride, size C.int, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	if size < 1 {
		size = 1 // the set check reports it
	}
	all := cmul(fn, n, C.size_t(size))
	check(fn, shmem.AlltoallActiveSet(w, cbytes(fn, dest, all), cbytes(fn, src, all), cint(fn, n),
		activeSet(start, logStride, size), pSync(fn, ps, C.SHMEM_ALLTOALL_SYNC_SIZE)))
}

// gshgo_reduce_as is the active-set reductions (shmem_TYPE_OP_to_all).
// pWrk is not used: the reduction goes through the library's scratch.
//
//export gshgo_reduce_as
func gshgo_reduce_as(dest, src unsafe.Pointer, nreduce, op, kind, size, start, logStride, psize C.int, pWrk unsafe.Pointer, ps *C.long, fn *C.char) {
	w := theWorld(fn)
	if nreduce < 0 {
		failf(fn, "nreduce %d is negative", int(nreduce))
	}
	nb := cmul(fn, C.size_t(nreduce), C.size_t(size))
	f := reduceForm{w: w, as: activeSet(start, logStride, psize), pSync: pSync(fn, ps, C.SHMEM_REDUCE_SYNC_SIZE), pWrk: pWrk, name: "to_all"}
	check(fn, reduceKind(f, op, kind, size, cbytes(fn, dest, nb), cbytes(fn, src, nb), fn))
}

// gshgo_pcontrol is shmem_pcontrol.
//
//export gshgo_pcontrol
func gshgo_pcontrol(level C.int, fn *C.char) {
	theWorld(fn).PControl(int(level))
}
