package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/core"
)

// The frame format, after the handshake (auth.go). Every frame starts with
// a fixed header of hdrLen bytes, little-endian:
//
//	0      op
//	1      typ      atomic type (opAtomic, opFetch) or value size (opPutValue, opGetValue)
//	2      aop      atomic operation (opAtomic, opFetch)
//	3      0        reserved
//	4:8    region   region index, in order of creation
//	8:16   off      byte offset in the region; the request id of opReply; the count of opAck
//	16:24  arg      length (opPut, opGet, opReply), value (opPutValue), operand (opAtomic, opFetch)
//
// Requests (opGet, opGetValue, opFetch) carry reqExtLen more bytes: the
// request id and, for opFetch, the compare operand of compare-and-swap.
// opPut and opReply are followed by arg bytes of payload. Fields an
// operation does not use must be zero, so each frame has one encoding.
// The version of this format is proven in the handshake, not repeated.
const (
	hdrLen    = 24
	reqExtLen = 16
	maxHdrLen = hdrLen + reqExtLen
)

// The operations.
const (
	opPut      byte = iota + 1 // payload into region at off
	opPutValue                 // typ bytes of arg at off
	opAtomic                   // non-fetching atomic
	opGet                      // request: arg bytes at off
	opGetValue                 // request: typ bytes at off
	opFetch                    // request: fetching atomic
	opReply                    // answer to request off, arg bytes of payload
	opAck                      // the sender has applied off non-fetching operations of ours in all
	opBye                      // the sender closes cleanly; nothing follows
	opEnd
)

var opNames = [...]string{"", "put", "put-value", "atomic", "get", "get-value", "fetch-atomic", "reply", "ack", "bye"}

func opName(op byte) string {
	if op > 0 && op < opEnd {
		return opNames[op]
	}
	return fmt.Sprintf("op(%d)", op)
}

// isRequest reports whether op carries the request extension and is
// answered by an opReply.
func isRequest(op byte) bool { return op == opGet || op == opGetValue || op == opFetch }

// header is a decoded frame header.
type header struct {
	op, typ, aop byte
	region       uint32
	off, arg     uint64
	id, cmp      uint64 // requests only
}

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
	return b
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
	case opReply, opAck, opBye:
		if h.typ != 0 || h.aop != 0 || h.region != 0 || (h.op != opReply && h.arg != 0) || (h.op == opBye && h.off != 0) {
			return h, frameErr("%s with nonzero unused fields", opName(h.op))
		}
	default:
		return h, frameErr("unknown operation %d", h.op)
	}
	return h, nil
}

// decodeExt decodes a request's extension into h.
func decodeExt(h *header, b []byte) error {
	h.id = binary.LittleEndian.Uint64(b)
	h.cmp = binary.LittleEndian.Uint64(b[8:])
	if h.op != opFetch && h.cmp != 0 {
		return frameErr("%s with compare operand %d", opName(h.op), h.cmp)
	}
	return nil
}
