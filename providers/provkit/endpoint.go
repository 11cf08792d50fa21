package provkit

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
)

// Err is err framed as the failure of op ("put", "new region", ...) on pe,
// -1 when the operation has no target PE, in the named provider: the
// *core.OpError every provider returns.
func Err(provider, op string, pe int, err error) error {
	return &core.OpError{Op: op, PE: pe, Provider: provider, Err: err}
}

// Endpoint is the part of a provider's endpoint that every provider's
// has: the provider's name for its errors, the number of PEs for its
// checks, and whether it is closed. A provider's endpoint embeds it and
// sets Provider and NPEs; it starts open.
type Endpoint struct {
	Provider string // the name errors carry
	NPEs     int    // the job's PEs: targets are 0..NPEs-1
	closed   atomic.Bool
}

// Closed reports whether the endpoint is closed.
func (e *Endpoint) Closed() bool { return e.closed.Load() }

// MarkClosed closes the endpoint to every later check and reports whether
// this call closed it: the endpoint's Close releases what it holds only
// then, so a second Close returns nil.
func (e *Endpoint) MarkClosed() bool { return e.closed.CompareAndSwap(false, true) }

// Err is err framed as op's failure on pe (-1: none) in the endpoint's
// provider.
func (e *Endpoint) Err(op string, pe int, err error) error {
	return &core.OpError{Op: op, PE: pe, Provider: e.Provider, Err: err}
}

// frame is Err's error, or nil for a nil err.
func (e *Endpoint) frame(op string, pe int, err error) error {
	if err != nil {
		// Err's literal, written out: one call less keeps CheckRMA
		// within the inliner's budget.
		err = &core.OpError{Op: op, PE: pe, Provider: e.Provider, Err: err}
	}
	return err
}

// CheckOpen is nil while the endpoint is open, else op's core.ErrClosed:
// the check of an operation without a target, such as Fence or Quiet.
func (e *Endpoint) CheckOpen(op string) error {
	if e.closed.Load() {
		return e.Err(op, -1, core.ErrClosed)
	}
	return nil
}

// CheckRMA checks an access of n bytes at off in pe's part of a region of
// size bytes (core.CheckRMA): a PE outside the job is core.ErrInvalid,
// an access outside the region core.ErrOutOfBounds.
func (e *Endpoint) CheckRMA(op string, pe, off, n, size int) error {
	return e.frame(op, pe, core.CheckRMA(pe, e.NPEs, off, n, size))
}

// CheckValue checks a PutValue or GetValue of size bytes at off in pe's
// part of a region of regionSize bytes (core.CheckValue).
func (e *Endpoint) CheckValue(op string, pe, off, size, regionSize int) error {
	return e.frame(op, pe, core.CheckValue(pe, e.NPEs, off, size, regionSize))
}

// CheckAtomic checks an atomic aop on a t at off in pe's part of a region
// of size bytes against what the provider executes, sup
// (core.CheckAtomic): undefined is core.ErrInvalid, not executed here
// core.ErrNotSupported, misaligned core.ErrInvalid.
func (e *Endpoint) CheckAtomic(op string, pe, off, size int, aop core.AtomicOp, t core.AtomicType, sup *core.AtomicSupport) error {
	return e.frame(op, pe, core.CheckAtomic(pe, e.NPEs, off, size, aop, t, sup))
}

// CheckNonFetching refuses a compare-swap in a non-fetching Atomic:
// without the compare operand, which only FetchAtomic takes, it has no
// meaning, and a compare with an implied zero would be a surprise.
func (e *Endpoint) CheckNonFetching(op string, pe int, aop core.AtomicOp, t core.AtomicType) error {
	if aop != core.AtomicCSwap {
		return nil
	}
	return e.noCompare(op, pe, aop, t)
}

func (e *Endpoint) noCompare(op string, pe int, aop core.AtomicOp, t core.AtomicType) error {
	return e.Err(op, pe, fmt.Errorf("compare-swap needs a compare value, which only FetchAtomic takes: %w",
		&core.AtomicOpError{Op: aop, Type: t, Err: core.ErrInvalid}))
}

// Region is what the checks need of a provider's region type: the domain
// that made a region, and the size of each PE's part of it.
type Region[D comparable] interface {
	core.Region
	Domain() D
	Size() int
}

// Target returns r as the provider's region type R if the endpoint is
// open and r is a region its domain, dom, made. Otherwise it returns the
// error that says why not: core.ErrClosed, or core.ErrInvalid for a nil
// region or one of another domain or provider.
func Target[R Region[D], D comparable](e *Endpoint, op string, pe int, r core.Region, dom D) (R, error) {
	reg, ok := r.(R)
	if !ok || reg.Domain() != dom || e.closed.Load() {
		var none R
		return none, e.targetErr(op, pe, r)
	}
	return reg, nil
}

// targetErr explains why Target refused r.
func (e *Endpoint) targetErr(op string, pe int, r core.Region) error {
	switch {
	case e.closed.Load():
		return e.Err(op, pe, core.ErrClosed)
	case r == nil:
		return e.Err(op, pe, fmt.Errorf("nil region: %w", core.ErrInvalid))
	}
	return e.Err(op, pe, fmt.Errorf("region %T was not created by this endpoint's domain: %w", r, core.ErrInvalid))
}

// RMA is Target, then CheckRMA for an access of n bytes at off in pe's
// part of the region.
func RMA[R Region[D], D comparable](e *Endpoint, op string, pe int, r core.Region, dom D, off, n int) (R, error) {
	reg, err := Target[R](e, op, pe, r, dom)
	if err == nil {
		err = e.CheckRMA(op, pe, off, n, reg.Size())
	}
	return checked(reg, err)
}

// Value is Target, then CheckValue for a PutValue or GetValue of size
// bytes at off in pe's part of the region.
func Value[R Region[D], D comparable](e *Endpoint, op string, pe int, r core.Region, dom D, off, size int) (R, error) {
	reg, err := Target[R](e, op, pe, r, dom)
	if err == nil {
		err = e.CheckValue(op, pe, off, size, reg.Size())
	}
	return checked(reg, err)
}

// Atomic is Target, then CheckAtomic for an atomic aop on a t at off in
// pe's part of the region, against sup.
func Atomic[R Region[D], D comparable](e *Endpoint, op string, pe int, r core.Region, dom D, off int,
	aop core.AtomicOp, t core.AtomicType, sup *core.AtomicSupport) (R, error) {
	reg, err := Target[R](e, op, pe, r, dom)
	if err == nil {
		err = e.CheckAtomic(op, pe, off, reg.Size(), aop, t, sup)
	}
	return checked(reg, err)
}

// checked is reg, or the zero R with a failed check's err.
func checked[R any](reg R, err error) (R, error) {
	if err != nil {
		var none R
		return none, err
	}
	return reg, nil
}
