package tcp

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
)

// region is a symmetric region: this PE's part, in memory of its own.
type region struct {
	d    *domain
	idx  uint32
	size int
	mem  []byte
	// registered: mem is the program's (RegisterRegion), never unmapped.
	registered bool
}

func (r *region) Local() []byte {
	if r.d.closed.Load() {
		return nil
	}
	return r.mem
}

// maxRegion bounds a region so that (index, offset) fits a watch key.
const maxRegion = 1 << watchOffBits

// NewRegion implements core.Domain. The PEs exchange sizes first and all
// fail, naming them, if they differ. Each PE maps its part and publishes
// it to its progress goroutines before the closing agreement, so no put
// can arrive for a region its target does not know yet.
func (d *domain) NewRegion(size int) (core.Region, error) {
	if d.closed.Load() {
		return nil, d.opErr("new region", core.ErrClosed)
	}
	d.mu.Lock()
	idx := d.nregions
	d.nregions++
	d.mu.Unlock()
	if err := core.AgreeRegion(d.boot, idx, size, maxRegion-1); err != nil {
		return nil, d.opErr("new region", err)
	}
	r := &region{d: d, idx: uint32(idx), size: size}
	var err error
	if size > 0 {
		r.mem, err = sys.MapPrivate(size)
		if errors.Is(err, syscall.ENOMEM) {
			err = fmt.Errorf("region of %d bytes: %w: %w", size, err, core.ErrNoMemory)
		}
	}
	if err == nil {
		d.publish(idx, r)
	}
	if err = core.Agree(d.boot, err); err != nil {
		d.publish(idx, nil)
		return nil, d.opErr("new region", errors.Join(err, sys.Unmap(r.mem)))
	}
	return r, nil
}

// RegisterRegion implements core.Domain: the region is mem itself, which
// the progress goroutines read and write for the peers as they do a
// region's own mapping. Close leaves mem to the program untouched.
func (d *domain) RegisterRegion(mem []byte) (core.Region, error) {
	const op = "register region"
	if d.closed.Load() {
		return nil, d.opErr(op, core.ErrClosed)
	}
	d.mu.Lock()
	idx := d.nregions
	d.nregions++
	d.mu.Unlock()
	if err := core.AgreeRegister(d.boot, idx, mem, maxRegion-1); err != nil {
		return nil, d.opErr(op, err)
	}
	r := &region{d: d, idx: uint32(idx), size: len(mem), mem: mem, registered: true}
	d.publish(idx, r)
	// The closing agreement is NewRegion's: nobody targets the region
	// before every PE has published it.
	if err := core.Agree(d.boot, nil); err != nil {
		d.publish(idx, nil)
		return nil, d.opErr(op, err)
	}
	return r, nil
}

// release lets go of r's memory: retires a region's own mapping (see
// core.Domain's Close), leaves a registered region's memory, the
// program's, alone.
func (r *region) release() error {
	if r.registered {
		return nil
	}
	return sys.Retire(r.mem)
}

// publish sets regions[idx] to r.
func (d *domain) publish(idx int, r *region) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := *d.regions.Load()
	regs := make([]*region, max(len(old), idx+1))
	copy(regs, old)
	regs[idx] = r
	d.regions.Store(&regs)
}

// target returns the n bytes at h's offset in h's region of this PE, or
// the protocol error of a frame that names memory this PE does not have.
func (d *domain) target(h *header, n, align uint64) ([]byte, error) {
	regs := *d.regions.Load()
	if uint64(h.region) >= uint64(len(regs)) || regs[h.region] == nil {
		return nil, frameErr("%s names region %d, which this PE does not have", opName(h.op), h.region)
	}
	m := regs[h.region].mem
	size := uint64(len(m))
	if !core.InBounds(h.off, n, size) {
		return nil, frameErr("%s of %d bytes at offset %d lies outside region %d of %d bytes", opName(h.op), n, h.off, h.region, size)
	}
	if h.off%align != 0 {
		return nil, frameErr("%s at offset %d is not %d-byte aligned", opName(h.op), h.off, align)
	}
	return m[h.off : h.off+n], nil
}
