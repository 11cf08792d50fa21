package loopback

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

var _ core.BlockMover = (*endpoint)(nil)

// PutBlocks implements core.BlockMover (CapBlocks): a loop of copies into
// pe's memory as mapped here, a block of one element of up to 8 bytes
// with one store, counted as one put and its waiters woken once for the
// span.
func (e *endpoint) PutBlocks(pe int, r core.Region, off int, src []byte, b core.Blocks) error {
	reg, err := e.blocks("put-blocks", pe, r, off, len(src), b)
	if reg == nil {
		return err
	}
	mem.ScatterBlocks(reg.peers[pe][off:], src, b)
	e.done()
	e.dom.notify(pe, reg, off, b.RemoteSpan())
	return nil
}

// GetBlocks implements core.BlockMover like PutBlocks: a loop of copies
// out of pe's memory.
func (e *endpoint) GetBlocks(pe int, r core.Region, off int, dst []byte, b core.Blocks) error {
	reg, err := e.blocks("get-blocks", pe, r, off, len(dst), b)
	if reg == nil {
		return err
	}
	mem.GatherBlocks(dst, reg.peers[pe][off:], b)
	e.done()
	return nil
}

// blocks checks a blocked move and returns its region, nil with the
// error (or with none, for an empty move) where nothing is to be done.
func (e *endpoint) blocks(op string, pe int, r core.Region, off, local int, b core.Blocks) (*region, error) {
	if err := b.Check(local); err != nil {
		return nil, e.Err(op, pe, err)
	}
	_, reg, err := e.rma(op, pe, r, off, b.RemoteSpan())
	if err != nil || b.Empty() {
		return nil, err
	}
	return reg, nil
}
