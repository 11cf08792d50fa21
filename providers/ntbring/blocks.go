package ntbring

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Blocked moves (core.BlockMover, CapBlocks: shmem's iput, iget, ibput and
// ibget). A blocked put to a neighbour whose window maps the region goes
// straight into that host's heap as one transfer: the blocks of up to
// pioMax bytes are stores through the window, a single element with one
// store; the larger ones are DMA descriptors submitted back to back on
// one channel, waited for together, the nearest the device's DMA
// contract (ntb.DMAChannel, one copy a descriptor) comes to a chain. One
// landed notice then covers the blocks' whole span, as one put's does.
// Everything else, a put to a host further on or across a cut link, a
// blocked get, and the seed protocol, moves a put or a get per block:
// the ring's descriptors carry one contiguous payload each, and a
// scatter at the destination would be a new kind of entry that relays
// and the cut's resend would have to carry.

var _ core.BlockMover = (*endpoint)(nil)

// blockPutter is a protocol that can put blocks straight into a
// neighbour's heap (ringProto). done false: it did not, and the blocks
// go one put each.
type blockPutter interface {
	putBlocksDirect(pe, j int, reg *region, off int, src []byte, b core.Blocks) (done bool, err error)
}

// PutBlocks implements core.BlockMover.
func (e *endpoint) PutBlocks(pe int, r core.Region, off int, src []byte, b core.Blocks) error {
	const name = "put-blocks"
	if err := b.Check(len(src)); err != nil {
		return e.Err(name, pe, err)
	}
	reg, err := e.rma(name, pe, r, off, b.RemoteSpan())
	if err != nil || b.Empty() {
		return err
	}
	if h, j := e.dom.where(pe); h != e.dom.rank {
		if bp, ok := e.dom.proto.(blockPutter); ok {
			if done, err := bp.putBlocksDirect(h, j, reg, off, src, b); err != nil {
				return e.Err(name, pe, err)
			} else if done {
				return nil
			}
		}
	}
	return core.EachBlock(e, pe, r, off, src, b, false)
}

// GetBlocks implements core.BlockMover: a get per block (see above).
func (e *endpoint) GetBlocks(pe int, r core.Region, off int, dst []byte, b core.Blocks) error {
	const name = "get-blocks"
	if err := b.Check(len(dst)); err != nil {
		return e.Err(name, pe, err)
	}
	if _, err := e.rma(name, pe, r, off, b.RemoteSpan()); err != nil || b.Empty() {
		return err
	}
	return core.EachBlock(e, pe, r, off, dst, b, true)
}

// putBlocksDirect implements blockPutter: the blocks into neighbour pe's
// heap through its window, then one landed notice for their span. A
// link that is cut before or while they go reports false: the blocks are
// sent again, one put each, round the cut, which rewrites what already
// landed with the same bytes.
func (p *ringProto) putBlocksDirect(pe, j int, reg *region, off int, src []byte, b core.Blocks) (bool, error) {
	span := b.RemoteSpan()
	l, win := p.directTo(pe, j, reg, off, span)
	if win == nil {
		return false, nil
	}
	to := win[off : off+span]
	value := b.Value()
	var done chan error
	c := l.channel(uint32(p.lenders.Add(1)))
	submitted := 0
	var subErr error
	for i := range b.N {
		s, d := src[i*b.LocalStride:][:b.Size], to[i*b.RemoteStride:][:b.Size]
		switch {
		case value:
			mem.StoreValue(d, 0, mem.LoadValue(s, 0, b.Elem), b.Elem)
		case b.Size <= pioMax:
			copy(d, s)
		default:
			if done == nil {
				done = make(chan error, b.N)
			}
			if err := c.Submit(d, s, func(err error) { done <- err }); err != nil {
				subErr = err
				break
			}
			submitted++
		}
		if subErr != nil {
			break
		}
	}
	for range submitted {
		if err := <-done; err != nil && subErr == nil {
			subErr = err
		}
	}
	if isCut(subErr) {
		return false, nil
	}
	if subErr != nil {
		return true, l.linkError("DMA", subErr)
	}
	return p.landedDirect(l, pe, j, reg, off, span)
}
