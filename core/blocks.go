package core

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Blocks is the shape of a blocked move (OpenSHMEM's iput, iget, ibput
// and ibget): N blocks of Size bytes, block i at byte i*RemoteStride
// from the offset in the target's region and at byte i*LocalStride in
// the local buffer. Elem is the size of the elements the blocks hold (1,
// 2, 4, 8 or 16 bytes); a block that is one element of up to 8 bytes is
// written with one store and read with one load, as PutValue and
// GetValue move it, so that a reader never sees it torn.
type Blocks struct {
	N, Size                   int
	RemoteStride, LocalStride int
	Elem                      int
}

// span is the bytes n blocks of size cover at stride, from the first
// block's start to the last one's end, or -1 if that overflows.
func span(n, size, stride int) int {
	if n == 0 || size == 0 {
		return 0
	}
	if stride > 0 && n-1 > (math.MaxInt-size)/stride {
		return -1
	}
	return (n-1)*stride + size
}

// RemoteSpan is the bytes b covers in the target's region, or -1 where
// that overflows.
func (b Blocks) RemoteSpan() int { return span(b.N, b.Size, b.RemoteStride) }

// LocalSpan is the bytes b covers in the local buffer, or -1 where that
// overflows.
func (b Blocks) LocalSpan() int { return span(b.N, b.Size, b.LocalStride) }

// Empty says whether b moves nothing.
func (b Blocks) Empty() bool { return b.N == 0 || b.Size == 0 }

// Contiguous says whether b's blocks lie end to end on both sides, so
// that it is one transfer of N*Size bytes.
func (b Blocks) Contiguous() bool {
	return b.N == 1 || b.RemoteStride == b.Size && b.LocalStride == b.Size
}

// Value says whether b's blocks are single elements that move as values
// (PutValue, GetValue).
func (b Blocks) Value() bool { return b.Size == b.Elem && b.Elem <= 8 }

// Check validates b against a local buffer of local bytes: counts not
// negative, strides of at least one element, an element size of 1, 2, 4,
// 8 or 16 bytes that divides the block, spans that do not overflow, and
// the local span inside the buffer. What it refuses is a *BlocksError
// wrapping ErrInvalid. The target's span is the endpoint's to check, as
// an access of RemoteSpan bytes at the offset.
func (b Blocks) Check(local int) error {
	switch b.Elem {
	case 1, 2, 4, 8, 16:
	default:
		return &BlocksError{Blocks: b, Why: "an element is 1, 2, 4, 8 or 16 bytes"}
	}
	switch {
	case b.N < 0 || b.Size < 0:
		return &BlocksError{Blocks: b, Why: "the counts must not be negative"}
	case b.Size%b.Elem != 0:
		return &BlocksError{Blocks: b, Why: "a block is whole elements"}
	case b.RemoteStride < b.Elem || b.LocalStride < b.Elem:
		return &BlocksError{Blocks: b, Why: "a stride is at least one element"}
	case b.RemoteSpan() < 0 || b.LocalSpan() < 0:
		return &BlocksError{Blocks: b, Why: "a span overflows"}
	case b.LocalSpan() > local:
		return &BlocksError{Blocks: b, Why: fmt.Sprintf("the local buffer holds %d bytes, the blocks span %d", local, b.LocalSpan())}
	}
	return nil
}

// BlocksError is a blocked move whose shape Check refuses.
type BlocksError struct {
	Blocks Blocks
	Why    string
}

func (e *BlocksError) Error() string {
	b := e.Blocks
	return fmt.Sprintf("%d blocks of %d bytes (elements of %d) at strides %d (remote) and %d (local): %s",
		b.N, b.Size, b.Elem, b.RemoteStride, b.LocalStride, e.Why)
}

func (e *BlocksError) Unwrap() error { return ErrInvalid }

// BlockMover is implemented by endpoints that move a blocked move as one
// operation (CapBlocks): one frame each way over tcp, the target
// scattering or gathering the blocks in its own memory. PutBlocks copies
// src's blocks into pe's part of r from off; it returns when src may be
// reused, and the data is complete at the target after Quiet, as Put's.
// GetBlocks copies the blocks of pe's part of r from off into dst's and
// returns when dst holds them, as Get. Each validates b (Blocks.Check)
// and the access of b.RemoteSpan() bytes at off as Put and Get validate
// theirs, and writes nothing when either is wrong. Where the blocks
// overlap, a later block's bytes are the ones that stay, as with one
// put per block in order. The counter counts one operation, however many
// the blocks.
type BlockMover interface {
	PutBlocks(pe int, r Region, off int, src []byte, b Blocks) error
	GetBlocks(pe int, r Region, off int, dst []byte, b Blocks) error
}

// PutBlocks moves src's blocks to pe: as one put where they are
// contiguous on both sides, through ep's PutBlocks where ep is a
// BlockMover, else as one put per block (a PutValue for a block that is
// one element of up to 8 bytes). An empty move does nothing.
func PutBlocks(ep Endpoint, pe int, r Region, off int, src []byte, b Blocks) error {
	if err := b.Check(len(src)); err != nil {
		return &OpError{Op: "put-blocks", PE: pe, Err: err}
	}
	switch {
	case b.Empty():
		return nil
	case b.N == 1 && b.Value():
		return ep.PutValue(pe, r, off, loadValue(src, b.Elem), b.Elem)
	case b.Contiguous():
		return ep.Put(pe, r, off, src[:b.N*b.Size])
	}
	if m, ok := ep.(BlockMover); ok {
		return m.PutBlocks(pe, r, off, src, b)
	}
	return EachBlock(ep, pe, r, off, src, b, false)
}

// GetBlocks is PutBlocks' inverse: pe's blocks into dst.
func GetBlocks(ep Endpoint, pe int, r Region, off int, dst []byte, b Blocks) error {
	if err := b.Check(len(dst)); err != nil {
		return &OpError{Op: "get-blocks", PE: pe, Err: err}
	}
	switch {
	case b.Empty():
		return nil
	case b.N == 1 && b.Value():
		v, err := ep.GetValue(pe, r, off, b.Elem)
		if err == nil {
			storeValue(dst, v, b.Elem)
		}
		return err
	case b.Contiguous():
		return ep.Get(pe, r, off, dst[:b.N*b.Size])
	}
	if m, ok := ep.(BlockMover); ok {
		return m.GetBlocks(pe, r, off, dst, b)
	}
	return EachBlock(ep, pe, r, off, dst, b, true)
}

// EachBlock moves b as one operation of ep per block, in order: what
// PutBlocks and GetBlocks do where ep is no BlockMover, and what a
// BlockMover falls back on for the moves it cannot make as one. b is
// valid (Blocks.Check).
func EachBlock(ep Endpoint, pe int, r Region, off int, local []byte, b Blocks, get bool) error {
	value := b.Value()
	for i := range b.N {
		o := off + i*b.RemoteStride
		l := local[i*b.LocalStride:][:b.Size]
		var err error
		switch {
		case value && get:
			var v uint64
			if v, err = ep.GetValue(pe, r, o, b.Elem); err == nil {
				storeValue(l, v, b.Elem)
			}
		case value:
			err = ep.PutValue(pe, r, o, loadValue(l, b.Elem), b.Elem)
		case get:
			err = ep.Get(pe, r, o, l)
		default:
			err = ep.Put(pe, r, o, l)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// loadValue reads the size (1, 2, 4 or 8) bytes of b in this host's byte
// order, as PutValue takes them; storeValue is its inverse. A local
// buffer is the caller's own, where no other PE looks, so no single load
// or store is needed.
func loadValue(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.NativeEndian.Uint16(b))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b))
	}
	return binary.NativeEndian.Uint64(b)
}

func storeValue(b []byte, v uint64, size int) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.NativeEndian.PutUint16(b, uint16(v))
	case 4:
		binary.NativeEndian.PutUint32(b, uint32(v))
	default:
		binary.NativeEndian.PutUint64(b, v)
	}
}
