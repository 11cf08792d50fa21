package hybrid

import "github.com/goshmem/goshmem/core"

var _ core.BlockMover = (*endpoint)(nil)

// PutBlocks implements core.BlockMover: the move goes whole to the
// transport of its target PE, which makes it one operation where it is a
// BlockMover itself (the composite has CapBlocks where both are), else
// one per block.
func (e *endpoint) PutBlocks(pe int, r core.Region, off int, src []byte, b core.Blocks) error {
	reg, err := e.checkBlocks("put-blocks", pe, r, off, len(src), b)
	if err != nil || b.Empty() {
		return err
	}
	if l := e.route[pe]; l >= 0 {
		return e.intraErr(core.PutBlocks(e.intra, l, reg.intra, off, src, b))
	}
	err = core.PutBlocks(e.inter, pe, reg.inter, off, src, b)
	if err == nil {
		e.deferred(false)
	}
	return err
}

// GetBlocks implements core.BlockMover like PutBlocks.
func (e *endpoint) GetBlocks(pe int, r core.Region, off int, dst []byte, b core.Blocks) error {
	reg, err := e.checkBlocks("get-blocks", pe, r, off, len(dst), b)
	if err != nil || b.Empty() {
		return err
	}
	if l := e.route[pe]; l >= 0 {
		return e.intraErr(core.GetBlocks(e.intra, l, reg.intra, off, dst, b))
	}
	return core.GetBlocks(e.inter, pe, reg.inter, off, dst, b)
}

// checkBlocks checks a blocked move's shape against a local buffer of
// local bytes and its span at off in pe's part of r.
func (e *endpoint) checkBlocks(op string, pe int, r core.Region, off, local int, b core.Blocks) (*region, error) {
	if err := b.Check(local); err != nil {
		return nil, e.opErr(op, pe, err)
	}
	if e.closed.Load() {
		return nil, e.opErr(op, pe, core.ErrClosed)
	}
	return e.checkRMA(op, pe, r, off, b.RemoteSpan())
}
