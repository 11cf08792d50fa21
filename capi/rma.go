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

// The slow path of RMA, atomics and point-to-point synchronisation: the
// C side (runtime.c) calls these when the fast path declined.

//export gshgo_put
func gshgo_put(x *C.struct_gsh_ctx, dest, src unsafe.Pointer, n C.size_t, pe, nbi C.int, fn *C.char) {
	e := ctxOf(x, fn)
	d, s := cbytes(fn, dest, n), cbytes(fn, src, n)
	if nbi != 0 {
		check(fn, shmem.PutNBI(e.c, d, s, int(pe)))
	} else {
		check(fn, shmem.Put(e.c, d, s, int(pe)))
	}
}

//export gshgo_get
func gshgo_get(x *C.struct_gsh_ctx, dest, src unsafe.Pointer, n C.size_t, pe, nbi C.int, fn *C.char) {
	e := ctxOf(x, fn)
	d, s := cbytes(fn, dest, n), cbytes(fn, src, n)
	if nbi != 0 {
		check(fn, shmem.GetNBI(e.c, d, s, int(pe)))
	} else {
		check(fn, shmem.Get(e.c, d, s, int(pe)))
	}
}

// gshgo_strided is iput (get 0) and iget (get 1): nelems elements of
// esize bytes, strides in elements.
//
//export gshgo_strided
func gshgo_strided(x *C.struct_gsh_ctx, dest, src unsafe.Pointer, dst, sst C.ptrdiff_t, nelems, esize C.size_t, pe, get C.int, fn *C.char) {
	e := ctxOf(x, fn)
	if nelems == 0 {
		return
	}
	if dst < 1 || sst < 1 {
		failf(fn, "strides %d and %d: strides must be at least 1", int64(dst), int64(sst))
	}
	n := cint(fn, nelems)
	span := func(stride C.ptrdiff_t) C.size_t {
		n := cmul(fn, nelems-1, C.size_t(stride)) + 1
		if n == 0 {
			failf(fn, "nelems %d at a stride of %d overflows size_t", uint64(nelems), int64(stride))
		}
		return cmul(fn, n, esize)
	}
	d, s := cbytes(fn, dest, span(dst)), cbytes(fn, src, span(sst))
	if get != 0 {
		check(fn, shmem.IGetBytes(e.c, d, s, int(esize), int(dst), int(sst), n, int(pe)))
		return
	}
	check(fn, shmem.IPutBytes(e.c, d, s, int(esize), int(dst), int(sst), n, int(pe)))
}

// gshgo_blocked is ibput (get 0) and ibget (get 1): nblocks blocks of
// bsize elements of esize bytes, strides in elements.
//
//export gshgo_blocked
func gshgo_blocked(x *C.struct_gsh_ctx, dest, src unsafe.Pointer, dst, sst C.ptrdiff_t, bsize, nblocks, esize C.size_t, pe, get C.int, fn *C.char) {
	e := ctxOf(x, fn)
	if nblocks == 0 || bsize == 0 {
		return
	}
	if dst < 1 || sst < 1 {
		failf(fn, "strides %d and %d: strides must be at least 1", int64(dst), int64(sst))
	}
	nb, bs := cint(fn, nblocks), cint(fn, bsize)
	span := func(stride C.ptrdiff_t) C.size_t {
		n := cmul(fn, nblocks-1, C.size_t(stride)) + bsize
		if n < bsize {
			failf(fn, "%d blocks of %d elements at a stride of %d overflow size_t", uint64(nblocks), uint64(bsize), int64(stride))
		}
		return cmul(fn, n, esize)
	}
	d, s := cbytes(fn, dest, span(dst)), cbytes(fn, src, span(sst))
	if get != 0 {
		check(fn, shmem.IBGetBytes(e.c, d, s, int(esize), int(dst), int(sst), bs, nb, int(pe)))
		return
	}
	check(fn, shmem.IBPutBytes(e.c, d, s, int(esize), int(dst), int(sst), bs, nb, int(pe)))
}

// signalOp maps SHMEM_SIGNAL_*; 0 (no Go operator) makes PutSignal fail
// with its message.
func signalOp(op C.int) shmem.SignalOp {
	switch op {
	case C.SHMEM_SIGNAL_SET:
		return shmem.SignalSet
	case C.SHMEM_SIGNAL_ADD:
		return shmem.SignalAdd
	}
	return 0
}

//export gshgo_put_signal
func gshgo_put_signal(x *C.struct_gsh_ctx, dest, src unsafe.Pointer, n C.size_t, sig *C.uint64_t, signal C.uint64_t, sigOp, pe, nbi C.int, fn *C.char) {
	e := ctxOf(x, fn)
	d, s := cbytes(fn, dest, n), cbytes(fn, src, n)
	sw := &mem.Slice[uint64](cbytes(fn, unsafe.Pointer(sig), 8))[0]
	if nbi != 0 {
		check(fn, shmem.PutSignalNBI(e.c, d, s, sw, uint64(signal), signalOp(sigOp), int(pe)))
	} else {
		check(fn, shmem.PutSignal(e.c, d, s, sw, uint64(signal), signalOp(sigOp), int(pe)))
	}
}

// gshgo_signal is shmem_[ctx_]signal_set and _add where the fast path
// does not reach the word.
//
//export gshgo_signal
func gshgo_signal(x *C.struct_gsh_ctx, sig *C.uint64_t, signal C.uint64_t, sigOp, pe C.int, fn *C.char) {
	e := ctxOf(x, fn)
	sw := &mem.Slice[uint64](cbytes(fn, unsafe.Pointer(sig), 8))[0]
	if signalOp(sigOp) == shmem.SignalAdd {
		check(fn, shmem.AddSignal(e.c, sw, uint64(signal), int(pe)))
	} else {
		check(fn, shmem.SetSignal(e.c, sw, uint64(signal), int(pe)))
	}
}

// gshgo_quiet and gshgo_fence are shmem_[ctx_]quiet and _fence.
//
//export gshgo_quiet
func gshgo_quiet(x *C.struct_gsh_ctx, fn *C.char) {
	check(fn, ctxOf(x, fn).q.Quiet())
}

// gshgo_pe_quiet is shmem_[ctx_]pe_quiet's part in Go.
//
//export gshgo_pe_quiet
func gshgo_pe_quiet(x *C.struct_gsh_ctx, pes *C.int, npes C.size_t, fn *C.char) {
	e := ctxOf(x, fn)
	list := make([]int, cint(fn, npes))
	for i, pe := range unsafe.Slice(pes, len(list)) {
		list[i] = int(pe)
	}
	check(fn, e.q.PEQuiet(list...))
}

// sessioner is what both a World and a Context are for sessions.
type sessioner interface {
	SessionStart(shmem.SessionOptions, *shmem.SessionConfig, shmem.SessionMask) error
	SessionStop() error
}

// gshgo_session_start and gshgo_session_stop are shmem_ctx_session_start
// and _stop's part in Go.
//
//export gshgo_session_start
func gshgo_session_start(x *C.struct_gsh_ctx, options C.long, totalOps C.size_t, mask C.long, fn *C.char) {
	s := ctxOf(x, fn).c.(sessioner)
	check(fn, s.SessionStart(shmem.SessionOptions(options), &shmem.SessionConfig{TotalOps: uint64(totalOps)}, shmem.SessionMask(mask)))
}

//export gshgo_session_stop
func gshgo_session_stop(x *C.struct_gsh_ctx, fn *C.char) {
	check(fn, ctxOf(x, fn).c.(sessioner).SessionStop())
}

//export gshgo_fence
func gshgo_fence(x *C.struct_gsh_ctx, fn *C.char) {
	check(fn, ctxOf(x, fn).q.Fence())
}

// gshgo_flush runs the n operations the C side queued on the context x
// (runtime.c: deferred operations), in order, then does then: nothing, a
// quiet or a fence. One call into Go for a put and its quiet, or for a
// window of non-blocking transfers and theirs. An operation that fails
// ends the job naming the routine the program called for it.
//
//export gshgo_flush
func gshgo_flush(x *C.struct_gsh_ctx, ops *C.struct_gsh_qop, n, then C.int, fn *C.char) {
	e := ctxOf(x, fn)
	if n > 0 {
		if ops == nil {
			failf(fn, "a NULL queue of %d operations", int(n))
		}
		for _, op := range unsafe.Slice(ops, int(n)) {
			runDeferred(e, &op)
		}
	}
	switch then {
	case C.GSH_THEN_NONE:
	case C.GSH_THEN_QUIET:
		check(fn, e.q.Quiet())
	case C.GSH_THEN_FENCE:
		check(fn, e.q.Fence())
	default:
		failf(fn, "unknown completion %d after queued operations (want 0 none, 1 quiet, 2 fence)", int(then))
	}
}

// runDeferred runs one queued operation on e.
func runDeferred(e *ctxEntry, op *C.struct_gsh_qop) {
	fn := op.fn
	if op.kind == C.GSH_DEFER_FENCE {
		check(fn, e.q.Fence())
		return
	}
	d, s := cbytes(fn, op.dest, op.n), cbytes(fn, op.src, op.n)
	pe := int(op.pe)
	switch op.kind {
	case C.GSH_DEFER_PUT:
		check(fn, shmem.Put(e.c, d, s, pe))
	case C.GSH_DEFER_PUT_NBI:
		check(fn, shmem.PutNBI(e.c, d, s, pe))
	case C.GSH_DEFER_GET_NBI:
		check(fn, shmem.GetNBI(e.c, d, s, pe))
	default:
		failf(fn, "unknown queued operation %d", int(op.kind))
	}
}

// element returns a pointer to the T at p.
func element[T any](fn *C.char, p unsafe.Pointer) *T {
	return &mem.Slice[T](cbytes(fn, p, C.size_t(mem.SizeOf[T]())))[0]
}

// gshgo_amo is gsh_amo's slow path: op on the element of kind and size at
// dest on pe. fetch is NULL for the blocking forms, which return the old
// value as bits; else the non-blocking fetching form writes it there at
// the next quiet.
//
//export gshgo_amo
func gshgo_amo(x *C.struct_gsh_ctx, fetch, dest unsafe.Pointer, op, kind, size C.int, operand, compare C.uint64_t, pe C.int, fn *C.char) C.uint64_t {
	e := ctxOf(x, fn)
	a := amoArgs{c: e.c, fn: fn, fetch: fetch, dest: dest, op: op, v: uint64(operand), cmp: uint64(compare), pe: int(pe)}
	var r uint64
	switch {
	case kind == C.GSH_INT && size == 4:
		r = amoInt[int32](a)
	case kind == C.GSH_INT && size == 8:
		r = amoInt[int64](a)
	case kind == C.GSH_UINT && size == 4:
		r = amoInt[uint32](a)
	case kind == C.GSH_UINT && size == 8:
		r = amoInt[uint64](a)
	case kind == C.GSH_FLOAT && size == 4:
		r = amoExt[float32](a)
	case kind == C.GSH_FLOAT && size == 8:
		r = amoExt[float64](a)
	default:
		failf(fn, "no atomic operations on elements of kind %d and size %d", int(kind), int(size))
	}
	return C.uint64_t(r)
}

type amoArgs struct {
	c           shmem.Ctx
	fn          *C.char
	fetch, dest unsafe.Pointer
	op          C.int
	v, cmp      uint64
	pe          int
}

// amoExt runs the operations every atomic type has: fetch, set, swap.
func amoExt[T shmem.AMOExt](a amoArgs) uint64 {
	p, v := element[T](a.fn, a.dest), mem.FromBits[T](a.v)
	var old T
	var err error
	if a.fetch != nil {
		f := element[T](a.fn, a.fetch)
		switch a.op {
		case C.GSH_AMO_FETCH:
			err = shmem.AtomicFetchNBI(a.c, f, p, a.pe)
		case C.GSH_AMO_SWAP:
			err = shmem.AtomicSwapNBI(a.c, f, p, v, a.pe)
		default:
			failf(a.fn, "atomic operation %d is not defined for this type", int(a.op))
		}
		check(a.fn, err)
		return 0
	}
	switch a.op {
	case C.GSH_AMO_FETCH:
		old, err = shmem.AtomicFetch(a.c, p, a.pe)
	case C.GSH_AMO_SET:
		err = shmem.AtomicSet(a.c, p, v, a.pe)
	case C.GSH_AMO_SWAP:
		old, err = shmem.AtomicSwap(a.c, p, v, a.pe)
	default:
		failf(a.fn, "atomic operation %d is not defined for this type", int(a.op))
	}
	check(a.fn, err)
	return mem.ToBits(old)
}

// amoInt runs every operation on the integer types.
func amoInt[T shmem.AMOInt](a amoArgs) uint64 {
	switch a.op {
	case C.GSH_AMO_FETCH, C.GSH_AMO_SET, C.GSH_AMO_SWAP:
		return amoExt[T](a)
	}
	p, v, cmp := element[T](a.fn, a.dest), mem.FromBits[T](a.v), mem.FromBits[T](a.cmp)
	var old T
	var err error
	if a.fetch != nil {
		f := element[T](a.fn, a.fetch)
		switch a.op {
		case C.GSH_AMO_CSWAP:
			err = shmem.AtomicCompareSwapNBI(a.c, f, p, cmp, v, a.pe)
		case C.GSH_AMO_FINC:
			err = shmem.AtomicFetchIncNBI(a.c, f, p, a.pe)
		case C.GSH_AMO_FADD:
			err = shmem.AtomicFetchAddNBI(a.c, f, p, v, a.pe)
		case C.GSH_AMO_FAND:
			err = shmem.AtomicFetchAndNBI(a.c, f, p, v, a.pe)
		case C.GSH_AMO_FOR:
			err = shmem.AtomicFetchOrNBI(a.c, f, p, v, a.pe)
		case C.GSH_AMO_FXOR:
			err = shmem.AtomicFetchXorNBI(a.c, f, p, v, a.pe)
		default:
			failf(a.fn, "atomic operation %d has no non-blocking fetching form", int(a.op))
		}
		check(a.fn, err)
		return 0
	}
	switch a.op {
	case C.GSH_AMO_CSWAP:
		old, err = shmem.AtomicCompareSwap(a.c, p, cmp, v, a.pe)
	case C.GSH_AMO_FINC:
		old, err = shmem.AtomicFetchInc(a.c, p, a.pe)
	case C.GSH_AMO_INC:
		err = shmem.AtomicInc(a.c, p, a.pe)
	case C.GSH_AMO_FADD:
		old, err = shmem.AtomicFetchAdd(a.c, p, v, a.pe)
	case C.GSH_AMO_ADD:
		err = shmem.AtomicAdd(a.c, p, v, a.pe)
	case C.GSH_AMO_FAND:
		old, err = shmem.AtomicFetchAnd(a.c, p, v, a.pe)
	case C.GSH_AMO_AND:
		err = shmem.AtomicAnd(a.c, p, v, a.pe)
	case C.GSH_AMO_FOR:
		old, err = shmem.AtomicFetchOr(a.c, p, v, a.pe)
	case C.GSH_AMO_OR:
		err = shmem.AtomicOr(a.c, p, v, a.pe)
	case C.GSH_AMO_FXOR:
		old, err = shmem.AtomicFetchXor(a.c, p, v, a.pe)
	case C.GSH_AMO_XOR:
		err = shmem.AtomicXor(a.c, p, v, a.pe)
	default:
		failf(a.fn, "unknown atomic operation %d", int(a.op))
	}
	check(a.fn, err)
	return mem.ToBits(old)
}

// cmpOf maps SHMEM_CMP_*; 0 (no Go comparison) makes the Go call fail
// with its message.
func cmpOf(c C.int) shmem.Cmp {
	switch c {
	case C.SHMEM_CMP_EQ:
		return shmem.CmpEQ
	case C.SHMEM_CMP_NE:
		return shmem.CmpNE
	case C.SHMEM_CMP_GT:
		return shmem.CmpGT
	case C.SHMEM_CMP_GE:
		return shmem.CmpGE
	case C.SHMEM_CMP_LT:
		return shmem.CmpLT
	case C.SHMEM_CMP_LE:
		return shmem.CmpLE
	}
	return 0
}

// waitArgs are gsh_wait's arguments, as Go values.
type waitArgs struct {
	w       *shmem.World
	fn      *C.char
	mode    C.int
	ivars   []byte
	n       int
	status  []int
	indices *C.size_t
	cmp     shmem.Cmp
	v       uint64
	values  unsafe.Pointer
}

// gshgo_wait is gsh_wait's slow path: the C side has spun on the
// condition and now lets shmem wait, which sleeps.
//
//export gshgo_wait
func gshgo_wait(mode C.int, ivars unsafe.Pointer, nelems C.size_t, status *C.int, indices *C.size_t,
	kind, size, cmp C.int, value C.uint64_t, values unsafe.Pointer, fn *C.char) C.size_t {
	a := waitArgs{w: theWorld(fn), fn: fn, mode: mode, n: cint(fn, nelems), indices: indices, cmp: cmpOf(cmp), v: uint64(value), values: values}
	if size <= 0 {
		failf(fn, "no waiting on elements of kind %d and size %d", int(kind), int(size))
	}
	a.ivars = cbytes(fn, ivars, cmul(fn, nelems, C.size_t(size)))
	if mode&^C.GSH_WAIT_BLOCK == C.GSH_WAIT_SOME {
		cmul(fn, nelems, C.size_t(unsafe.Sizeof(*indices))) // the indices written, and their copy here
	}
	if status != nil && nelems > 0 {
		cmul(fn, nelems, C.size_t(unsafe.Sizeof(*status)))
		st := unsafe.Slice((*C.int)(status), a.n)
		a.status = make([]int, a.n)
		for i, s := range st {
			a.status[i] = int(s)
		}
	}
	switch {
	case kind == C.GSH_INT && size == 2:
		return waitTyped[int16](a)
	case kind == C.GSH_INT && size == 4:
		return waitTyped[int32](a)
	case kind == C.GSH_INT && size == 8:
		return waitTyped[int64](a)
	case kind == C.GSH_UINT && size == 2:
		return waitTyped[uint16](a)
	case kind == C.GSH_UINT && size == 4:
		return waitTyped[uint32](a)
	case kind == C.GSH_UINT && size == 8:
		return waitTyped[uint64](a)
	}
	failf(fn, "no waiting on elements of kind %d and size %d", int(kind), int(size))
	return 0
}

const sizeMax = ^C.size_t(0)

func waitTyped[T shmem.WaitElem](a waitArgs) C.size_t {
	ivars := mem.Slice[T](a.ivars)
	v := mem.FromBits[T](a.v)
	var vals []T
	if a.values != nil {
		vals = mem.Slice[T](cbytes(a.fn, a.values, C.size_t(a.n*mem.SizeOf[T]())))
	}
	block := a.mode&C.GSH_WAIT_BLOCK != 0
	var err error
	switch a.mode &^ C.GSH_WAIT_BLOCK {
	case C.GSH_WAIT_ONE:
		if len(ivars) == 0 {
			failf(a.fn, "a NULL variable")
		}
		if block {
			check(a.fn, shmem.WaitUntil(a.w, &ivars[0], a.cmp, v))
			return 1
		}
		ok, err := shmem.Test(a.w, &ivars[0], a.cmp, v)
		check(a.fn, err)
		return boolSize(ok)
	case C.GSH_WAIT_ALL:
		ok := true
		switch {
		case block && vals != nil:
			err = shmem.WaitUntilAllVector(a.w, ivars, a.status, a.cmp, vals)
		case block:
			err = shmem.WaitUntilAll(a.w, ivars, a.status, a.cmp, v)
		case vals != nil:
			ok, err = shmem.TestAllVector(a.w, ivars, a.status, a.cmp, vals)
		default:
			ok, err = shmem.TestAll(a.w, ivars, a.status, a.cmp, v)
		}
		check(a.fn, err)
		return boolSize(ok)
	case C.GSH_WAIT_ANY:
		var i int
		switch {
		case block && vals != nil:
			i, err = shmem.WaitUntilAnyVector(a.w, ivars, a.status, a.cmp, vals)
		case block:
			i, err = shmem.WaitUntilAny(a.w, ivars, a.status, a.cmp, v)
		case vals != nil:
			i, err = shmem.TestAnyVector(a.w, ivars, a.status, a.cmp, vals)
		default:
			i, err = shmem.TestAny(a.w, ivars, a.status, a.cmp, v)
		}
		check(a.fn, err)
		if i < 0 {
			return sizeMax
		}
		return C.size_t(i)
	case C.GSH_WAIT_SOME:
		idx := make([]int, a.n)
		var k int
		switch {
		case block && vals != nil:
			k, err = shmem.WaitUntilSomeVector(a.w, ivars, idx, a.status, a.cmp, vals)
		case block:
			k, err = shmem.WaitUntilSome(a.w, ivars, idx, a.status, a.cmp, v)
		case vals != nil:
			k, err = shmem.TestSomeVector(a.w, ivars, idx, a.status, a.cmp, vals)
		default:
			k, err = shmem.TestSome(a.w, ivars, idx, a.status, a.cmp, v)
		}
		check(a.fn, err)
		if k > 0 {
			if a.indices == nil {
				failf(a.fn, "a NULL indices array")
			}
			out := unsafe.Slice(a.indices, k)
			for j := range k {
				out[j] = C.size_t(idx[j])
			}
		}
		return C.size_t(k)
	}
	failf(a.fn, "unknown wait form %d", int(a.mode))
	return 0
}

func boolSize(b bool) C.size_t {
	if b {
		return 1
	}
	return 0
}

// gshgo_signal_wait_until is shmem_signal_wait_until's slow path.
//
//export gshgo_signal_wait_until
func gshgo_signal_wait_until(sig *C.uint64_t, cmp C.int, value C.uint64_t, fn *C.char) C.uint64_t {
	w := theWorld(fn)
	v, err := shmem.SignalWaitUntil(w, element[uint64](fn, unsafe.Pointer(sig)), cmpOf(cmp), uint64(value))
	check(fn, err)
	return C.uint64_t(v)
}
