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
	if err == nil {
		return nil
	}
	return e.Err(op, pe, err)
}

// CheckOpen is nil while the endpoint is open, else op's core.ErrClosed:
// the check of an operation without a target, such as Fence or Quiet.
func (e *Endpoint) CheckOpen(op string) error {
	if e.closed.Load() {
		return e.Err(op, -1, core.ErrClosed)
	}
	return nil
}

// CheckPEs is nil while the endpoint is open and every PE of pes is one
// of the job's: the check of a per-PE quiet (core.PEQuieter).
func (e *Endpoint) CheckPEs(op string, pes []int) error {
	if err := e.CheckOpen(op); err != nil {
		return err
	}
	for _, pe := range pes {
		if err := core.CheckPE(pe, e.NPEs); err != nil {
			return e.Err(op, pe, err)
		}
	}
	return nil
}

// Foreign is the size a provider passes for a region that is not one of
// its endpoint's domain: nil, another domain's, or another provider's.
// The checks then refuse it with core.ErrInvalid.
const Foreign = -1

// The checks of an operation's target take the region r as the operation
// named it and size, what the provider found r to be: the size of each
// PE's part if r is a region of the endpoint's domain, else Foreign. A
// closed endpoint fails them with core.ErrClosed. They allocate only when
// they fail.

// CheckRegion checks r alone, for a provider that checks state of its own
// between the region and the access.
func (e *Endpoint) CheckRegion(op string, pe int, r core.Region, size int) error {
	if size == Foreign || e.closed.Load() {
		return e.regionErr(op, pe, r)
	}
	return nil
}

// regionErr says why r may not be used.
func (e *Endpoint) regionErr(op string, pe int, r core.Region) error {
	switch {
	case e.closed.Load():
		return e.Err(op, pe, core.ErrClosed)
	case r == nil:
		return e.Err(op, pe, fmt.Errorf("nil region: %w", core.ErrInvalid))
	}
	return e.Err(op, pe, fmt.Errorf("region %T was not created by this endpoint's domain: %w", r, core.ErrInvalid))
}

// CheckRMA checks r, then an access of n bytes at off in pe's part of it
// (core.CheckRMA): a PE outside the job is core.ErrInvalid, an access
// outside the region core.ErrOutOfBounds.
func (e *Endpoint) CheckRMA(op string, pe int, r core.Region, size, off, n int) error {
	if size == Foreign || e.closed.Load() {
		return e.regionErr(op, pe, r)
	}
	return e.frame(op, pe, core.CheckRMA(pe, e.NPEs, off, n, size))
}

// CheckValue checks r, then a PutValue or GetValue of n bytes at off in
// pe's part of it (core.CheckValue): a size other than 1, 2, 4 or 8 is
// core.ErrInvalid.
func (e *Endpoint) CheckValue(op string, pe int, r core.Region, size, off, n int) error {
	if size == Foreign || e.closed.Load() {
		return e.regionErr(op, pe, r)
	}
	return e.frame(op, pe, core.CheckValue(pe, e.NPEs, off, n, size))
}

// CheckAtomic checks r, then an atomic aop on a t at off in pe's part of
// it against what the provider executes, sup (core.CheckAtomic):
// undefined is core.ErrInvalid, not executed here core.ErrNotSupported,
// misaligned core.ErrInvalid.
func (e *Endpoint) CheckAtomic(op string, pe int, r core.Region, size, off int, aop core.AtomicOp, t core.AtomicType, sup *core.AtomicSupport) error {
	if size == Foreign || e.closed.Load() {
		return e.regionErr(op, pe, r)
	}
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
