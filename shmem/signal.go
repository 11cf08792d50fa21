package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// SignalOp says how PutSignal updates the signal word.
type SignalOp uint8

const (
	SignalSet SignalOp = iota + 1 // SHMEM_SIGNAL_SET: the word becomes the signal value
	SignalAdd                     // SHMEM_SIGNAL_ADD: the signal value is added to the word
)

func (o SignalOp) String() string {
	switch o {
	case SignalSet:
		return "set"
	case SignalAdd:
		return "add"
	}
	return fmt.Sprintf("SignalOp(%d)", uint8(o))
}

// atomicOp maps a signal operation to the atomic that carries it.
func (o SignalOp) atomicOp() (core.AtomicOp, error) {
	switch o {
	case SignalSet:
		return core.AtomicWrite, nil
	case SignalAdd:
		return core.AtomicAdd, nil
	}
	return 0, fmt.Errorf("shmem: put_signal: signal operation %d is neither SignalSet nor SignalAdd: %w", uint8(o), core.ErrInvalid)
}

// PutSignal copies src into the symmetric dst on PE pe, then updates the
// symmetric signal word *sig on pe with signal by op (shmem_put_signal). A
// PE that sees the signal change sees the data: the update is fenced
// behind the put. It returns when src may be reused; both are complete at
// pe after Quiet.
func PutSignal[T Elem](c Ctx, dst, src []T, sig *uint64, signal uint64, op SignalOp, pe int) error {
	return putSignal(c, dst, src, sig, signal, op, pe, false)
}

// PutSignalNBI is PutSignal that may return before src is read: src must
// not change until the next Quiet on c (shmem_put_signal_nbi).
func PutSignalNBI[T Elem](c Ctx, dst, src []T, sig *uint64, signal uint64, op SignalOp, pe int) error {
	return putSignal(c, dst, src, sig, signal, op, pe, true)
}

// putSignal is PutSignal, and with nbi PutSignalNBI: a blocking one goes
// as one operation where the endpoint carries both as one
// (core.CapPutSignal); a non-blocking one as PutNBI, Fence and Atomic, so a
// large put is not waited for.
func putSignal[T Elem](c Ctx, dst, src []T, sig *uint64, signal uint64, op SignalOp, pe int, nbi bool) error {
	x := c.context()
	aop, err := op.atomicOp()
	if err != nil {
		return err
	}
	sigReg, sigOff, err := x.w.sym("put_signal", mem.PtrAddr(sig), 8)
	if err != nil {
		return err
	}
	_, r, off, b, err := transfer(c, "put_signal", dst, src)
	if err != nil {
		return err
	}
	if !nbi {
		return x.ep.PutSignal(pe, r, off, b, sigReg, sigOff, aop, signal)
	}
	if len(b) > 0 {
		if err := x.ep.PutNBI(pe, r, off, b); err != nil {
			return err
		}
		if err := x.ep.Fence(); err != nil {
			return err
		}
	}
	return x.ep.Atomic(pe, sigReg, sigOff, aop, core.Uint64, signal)
}

// AddSignal adds signal to the symmetric signal word *sig on PE pe, as one
// atomic operation (shmem_signal_add). It is the signal update of
// PutSignal with SignalAdd and no data: atomic with respect to every other
// signal update of the word, and ordered after this context's earlier
// puts by Fence, as they are.
func AddSignal(c Ctx, sig *uint64, signal uint64, pe int) error {
	return updateSignal(c, "signal_add", sig, signal, SignalAdd, pe)
}

// SetSignal sets the symmetric signal word *sig on PE pe to signal, as
// one atomic operation (shmem_signal_set); see AddSignal.
func SetSignal(c Ctx, sig *uint64, signal uint64, pe int) error {
	return updateSignal(c, "signal_set", sig, signal, SignalSet, pe)
}

// updateSignal is AddSignal and SetSignal: the atomic that carries
// PutSignal's signal update, alone.
func updateSignal(c Ctx, op string, sig *uint64, signal uint64, sop SignalOp, pe int) error {
	x := c.context()
	aop, err := sop.atomicOp()
	if err != nil {
		return err
	}
	r, off, err := x.w.sym(op, mem.PtrAddr(sig), 8)
	if err != nil {
		return err
	}
	return x.ep.Atomic(pe, r, off, aop, core.Uint64, signal)
}

// SignalFetch returns the value of the symmetric signal word *sig on this
// PE (shmem_signal_fetch).
func SignalFetch(c Ctx, sig *uint64) (uint64, error) {
	if _, _, err := c.context().w.sym("signal_fetch", mem.PtrAddr(sig), 8); err != nil {
		return 0, err
	}
	return mem.Load(sig), nil
}

// SignalWaitUntil blocks until the symmetric signal word *sig on this PE
// satisfies *sig cmp v, and returns the value that did
// (shmem_signal_wait_until).
func SignalWaitUntil(c Ctx, sig *uint64, cmp Cmp, v uint64) (uint64, error) {
	var seen uint64
	err := waitVar(c, "signal_wait_until", sig, cmp, func(x uint64) bool {
		seen = x
		return compare(x, cmp, v)
	})
	return seen, err
}
