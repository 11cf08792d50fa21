package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/goshmem/goshmem/core"
)

// The frame format, after the handshake (auth.go). Every frame starts with
// a fixed header of hdrLen bytes, little-endian:
//
//	0      op
//	1      typ      atomic type (opAtomic, opFetch), value size (opPutValue, opGetValue) or element size (opPutBlocks, opGetBlocks)
//	2      aop      atomic operation (opAtomic, opFetch)
//	3      0        reserved
//	4:8    region   region index, in order of creation
//	8:16   off      byte offset in the region; the request id of opReply; the count of opAck
//	16:24  arg      length (opPut, opGet, opReply, and the blocks' of opPutBlocks, opGetBlocks), value (opPutValue), operand (opAtomic, opFetch)
//
// Requests (opGet, opGetValue, opFetch, opGetBlocks) carry reqExtLen more
// bytes: the request id and, for opFetch, the compare operand of
// compare-and-swap. The blocked moves (opPutBlocks, opGetBlocks) carry
// blkExtLen more after that: the bytes of a block and the stride, in
// bytes, from one block's start to the next's at the target; their typ
// is the size of the blocks' elements, and arg is the bytes of all the
// blocks together, a whole number (at least two) of blocks.
// opPut, opPutBlocks and opReply are followed by arg bytes of payload,
// a blocked move's blocks packed end to end. Fields an
// operation does not use must be zero, so each frame has one encoding.
// The version of this format is proven in the handshake, not repeated.
const (
	hdrLen    = 24
	reqExtLen = 16
	blkExtLen = 16
	maxHdrLen = hdrLen + reqExtLen + blkExtLen
)

// The operations.
const (
	opPut       byte = iota + 1 // payload into region at off
	opPutValue                  // typ bytes of arg at off
	opAtomic                    // non-fetching atomic
	opGet                       // request: arg bytes at off
	opGetValue                  // request: typ bytes at off
	opFetch                     // request: fetching atomic
	opReply                     // answer to request off, arg bytes of payload
	opAck                       // the sender has applied off non-fetching operations of ours in all
	opBye                       // the sender closes cleanly; nothing follows
	opPutBlocks                 // payload's blocks scattered into region from off, stride apart
	opGetBlocks                 // request: the blocks from off, stride apart, gathered into one reply
	opEnd
)

var opNames = [...]string{"", "put", "put-value", "atomic", "get", "get-value", "fetch-atomic", "reply", "ack", "bye", "put-blocks", "get-blocks"}

func opName(op byte) string {
	if op > 0 && op < opEnd {
		return opNames[op]
	}
	return fmt.Sprintf("op(%d)", op)
}

// isRequest reports whether op carries the request extension and is
// answered by an opReply.
func isRequest(op byte) bool {
	return op == opGet || op == opGetValue || op == opFetch || op == opGetBlocks
}

// maxBlocksFrame is the most bytes of blocks one blocked move's frame
// carries: both ends copy them (the issuer's gather of a put into its
// send queue, the target's gather of a get into its reply), so a frame
// holds no more than the connection's read buffer does; a larger move
// is several frames.
const maxBlocksFrame = readBufSize

// readBufSize is the size of a connection's read buffer.
const readBufSize = 256 << 10

// isBlocks reports whether op carries the blocks extension.
func isBlocks(op byte) bool { return op == opPutBlocks || op == opGetBlocks }

// header is a decoded frame header.
type header struct {
	op, typ, aop byte
	region       uint32
	off, arg     uint64
	id, cmp      uint64 // requests only
	bsize, str   uint64 // blocked moves only: a block's bytes, the stride
}

// blocks is how many blocks a blocked move's frame moves.
func (h *header) blocks() uint64 { return h.arg / h.bsize }

// appendHeader encodes h at the end of b.
func appendHeader(b []byte, h *header) []byte {
	b = append(b, h.op, h.typ, h.aop, 0)
	b = binary.LittleEndian.AppendUint32(b, h.region)
	b = binary.LittleEndian.AppendUint64(b, h.off)
	b = binary.LittleEndian.AppendUint64(b, h.arg)
	if isRequest(h.op) {
		b = binary.LittleEndian.AppendUint64(b, h.id)
		b = binary.LittleEndian.AppendUint64(b, h.cmp)
	}
	if isBlocks(h.op) {
		b = binary.LittleEndian.AppendUint64(b, h.bsize)
		b = binary.LittleEndian.AppendUint64(b, h.str)
	}
	return b
}

// extLen is how many bytes follow the fixed header of a frame of op
// before its payload.
func extLen(op byte) int {
	n := 0
	if isRequest(op) {
		n += reqExtLen
	}
	if isBlocks(op) {
		n += blkExtLen
	}
	return n
}

// errFrame marks a frame that breaks the protocol; the connection that
// carried it is dropped.
var errFrame = errors.New("malformed frame")

func frameErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errFrame, fmt.Sprintf(format, a...))
}

// decodeHeader decodes the first hdrLen bytes of a frame. For a request
// the caller reads reqExtLen more and passes them to decodeExt. It checks
// everything that needs no knowledge of the receiver's memory: a known
// operation, zero in unused fields, a valid value size, an atomic this
// provider executes. Bounds are checked against the region where the
// frame is applied.
func decodeHeader(b []byte) (header, error) {
	h := header{op: b[0], typ: b[1], aop: b[2],
		region: binary.LittleEndian.Uint32(b[4:]),
		off:    binary.LittleEndian.Uint64(b[8:]),
		arg:    binary.LittleEndian.Uint64(b[16:])}
	if b[3] != 0 {
		return h, frameErr("reserved byte is %d", b[3])
	}
	switch h.op {
	case opPut, opGet:
		if h.typ != 0 || h.aop != 0 {
			return h, frameErr("%s with type %d, atomic op %d", opName(h.op), h.typ, h.aop)
		}
	case opPutValue, opGetValue:
		if h.aop != 0 || (h.typ != 1 && h.typ != 2 && h.typ != 4 && h.typ != 8) {
			return h, frameErr("%s of %d bytes, atomic op %d", opName(h.op), h.typ, h.aop)
		}
		if h.op == opGetValue && h.arg != 0 {
			return h, frameErr("get-value with argument %d", h.arg)
		}
	case opAtomic, opFetch:
		op, t := core.AtomicOp(h.aop), core.AtomicType(h.typ)
		if !fullAtomics.Supports(op, t) || (h.op == opAtomic && op == core.AtomicCSwap) {
			return h, frameErr("%s %s on %s", opName(h.op), op, t)
		}
	case opPutBlocks, opGetBlocks:
		switch h.typ {
		case 1, 2, 4, 8, 16:
		default:
			return h, frameErr("%s of %d-byte elements", opName(h.op), h.typ)
		}
		if h.aop != 0 {
			return h, frameErr("%s with atomic op %d", opName(h.op), h.aop)
		}
	case opReply, opAck, opBye:
		if h.typ != 0 || h.aop != 0 || h.region != 0 || (h.op != opReply && h.arg != 0) || (h.op == opBye && h.off != 0) {
			return h, frameErr("%s with nonzero unused fields", opName(h.op))
		}
	default:
		return h, frameErr("unknown operation %d", h.op)
	}
	return h, nil
}

// decodeExt decodes the extensions of h's frame, the extLen(h.op) bytes
// of b, into h: a request's id and compare operand, a blocked move's
// shape. A blocked move is whole elements in blocks of whole elements,
// at least two blocks (one is a put or a get), at a stride of at least
// one element, and its span is the frame's to check against the region.
func decodeExt(h *header, b []byte) error {
	if isRequest(h.op) {
		h.id = binary.LittleEndian.Uint64(b)
		h.cmp = binary.LittleEndian.Uint64(b[8:])
		if h.op != opFetch && h.cmp != 0 {
			return frameErr("%s with compare operand %d", opName(h.op), h.cmp)
		}
		b = b[reqExtLen:]
	}
	if isBlocks(h.op) {
		h.bsize = binary.LittleEndian.Uint64(b)
		h.str = binary.LittleEndian.Uint64(b[8:])
		e := uint64(h.typ)
		switch {
		case h.bsize == 0 || h.bsize%e != 0:
			return frameErr("%s in blocks of %d bytes of %d-byte elements", opName(h.op), h.bsize, e)
		case h.arg > maxBlocksFrame:
			return frameErr("%s of %d bytes, more than a frame's %d", opName(h.op), h.arg, maxBlocksFrame)
		case h.arg%h.bsize != 0 || h.arg/h.bsize < 2:
			return frameErr("%s of %d bytes in blocks of %d", opName(h.op), h.arg, h.bsize)
		case h.str < e:
			return frameErr("%s at a stride of %d bytes, below an element's %d", opName(h.op), h.str, e)
		}
	}
	return nil
}

// blocksSpan is how many bytes a blocked move's blocks cover at the
// target, from the first one's start to the last one's end; ok is false
// where that overflows.
func (h *header) blocksSpan() (uint64, bool) {
	n := h.blocks() - 1
	if n != 0 && h.str > (math.MaxUint64-h.bsize)/n {
		return 0, false
	}
	return n*h.str + h.bsize, true
}
