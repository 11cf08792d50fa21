package main

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// self is a provider for jobs of one PE whose regions are placed in
// memory the caller provides (core.RegionPlacer) and never made any
// other way: mode "placed" serves it, to test placement through a plugin.
type self struct{}

func (self) Name() string { return "self" }

func (self) Info() core.Info {
	return core.Info{Name: "self", Description: "one PE, regions in given memory", Version: "1",
		Caps: core.CapRMA | core.CapAtomic | core.CapFetchAtomic | core.CapCompareSwap, Atomics: core.FullAtomics(),
		Locality: core.OneHost, Progress: core.ProgressAuto, MaxMsgSize: core.Unbounded, InjectSize: core.Unbounded}
}

func (self) Open(cfg *core.Config) (core.Domain, error) {
	if n := cfg.Bootstrap.Size(); n != 1 {
		return nil, fmt.Errorf("self serves jobs of one PE, not %d: %w", n, core.ErrNotSupported)
	}
	return selfDomain{}, nil
}

type selfDomain struct{}

func (selfDomain) Rank() int    { return 0 }
func (selfDomain) Size() int    { return 1 }
func (selfDomain) Close() error { return nil }

func (selfDomain) NewRegion(int) (core.Region, error) {
	return nil, fmt.Errorf("self only places regions: %w", core.ErrNotSupported)
}

func (selfDomain) NewRegionAt(m []byte) (core.Region, error) { return selfRegion(m), nil }

func (selfDomain) NewEndpoint(core.EndpointOptions) (core.Endpoint, error) {
	return &selfEndpoint{}, nil
}

type selfRegion []byte

func (r selfRegion) Local() []byte { return r }

// selfEndpoint moves data within the one PE's regions.
type selfEndpoint struct{ counter core.Counter }

var atomics = core.FullAtomics()

func (*selfEndpoint) Put(pe int, r core.Region, off int, src []byte) error {
	b := r.Local()
	if err := core.CheckRMA(pe, 1, off, len(src), len(b)); err != nil {
		return err
	}
	copy(b[off:], src)
	return nil
}

func (*selfEndpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	b := r.Local()
	if err := core.CheckRMA(pe, 1, off, len(dst), len(b)); err != nil {
		return err
	}
	copy(dst, b[off:])
	return nil
}

func (e *selfEndpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	return e.Put(pe, r, off, src)
}

func (e *selfEndpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	return e.Get(pe, r, off, dst)
}

func (*selfEndpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	b := r.Local()
	if err := core.CheckValue(pe, 1, off, size, len(b)); err != nil {
		return err
	}
	mem.StoreValue(b, off, v, size)
	return nil
}

func (*selfEndpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	b := r.Local()
	if err := core.CheckValue(pe, 1, off, size, len(b)); err != nil {
		return 0, err
	}
	return mem.LoadValue(b, off, size), nil
}

func (e *selfEndpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	_, err := e.FetchAtomic(pe, r, off, op, t, operand, 0)
	return err
}

// PutSignal implements core.Endpoint: Put, Fence and Atomic.
func (e *selfEndpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, operand)
}

func (*selfEndpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	b := r.Local()
	if err := core.CheckAtomic(pe, 1, off, len(b), op, t, &atomics); err != nil {
		return 0, err
	}
	return mem.Atomic(b, off, op, t, operand, compare), nil
}

func (*selfEndpoint) Fence() error             { return nil }
func (*selfEndpoint) Quiet() error             { return nil }
func (e *selfEndpoint) Counter() *core.Counter { return &e.counter }
func (*selfEndpoint) Close() error             { return nil }

// RegisterRegion registers the memory as it is: one PE shares it with nobody.
func (selfDomain) RegisterRegion(m []byte) (core.Region, error) {
	if err := core.CheckRegisterMem(m); err != nil {
		return nil, err
	}
	return selfRegion(m), nil
}
