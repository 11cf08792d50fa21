package ntbring

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// kind is what a transfer carries: the seeds' send/receive flag, widened
// to the messages a one-sided protocol needs.
type kind uint8

const (
	kindPut      kind = iota + 1 // payload lands in dst's region at off
	kindPutAck                   // dst tells src its put tag landed
	kindGetReq                   // payload: a getRequest; dst is the owner
	kindGetResp                  // payload: the bytes read, for tag
	kindAmoReq                   // payload: an amoRequest; dst is the owner
	kindAmoResp                  // payload: the old value, 8 bytes
	kindNack                     // the owner refused tag; payload: reason byte
	kindLanded                   // ring: size bytes landed in dst's region at off; ack tag unless 0
	kindBarrier                  // ring: a dissemination barrier signal of round
	kindCut                      // ring: src's link on side to dst is down; src took dst's entries up to taken
	kindRepair                   // ring: src's link on side to dst is up again and its new ring in use
	kindLinkDown                 // torus: the link on side of host linkHost is down; src tells its neighbour dst
	kindEnd
)

var kindNames = [...]string{"", "put", "put-ack", "get-req", "get-resp", "amo-req", "amo-resp", "nack", "landed", "barrier", "cut", "repair", "link-down"}

func (k kind) String() string {
	if k > 0 && k < kindEnd {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// isResponse reports whether k completes an operation of the host it is
// addressed to, rather than asking it to do something.
func (k kind) isResponse() bool {
	return k == kindPutAck || k == kindGetResp || k == kindAmoResp || k == kindNack
}

// isLinkNotice reports whether k tells the hosts of the ring about a
// link: src's link on side, whose other end is dst.
func (k kind) isLinkNotice() bool { return k == kindCut || k == kindRepair }

// metaWords is how many 32-bit scratchpads one transfer's metadata takes.
const metaWords = 4

// maxHosts is the largest ring: host ids travel in 8 bits of metadata,
// and the broken-ring alarm names a host other than the one that hears
// it, relative to that one, in 6 doorbell bits (alarm.go). The seeds'
// hardware never went past a handful of hosts.
const maxHosts = 64

// maxRounds bounds the rounds of the dissemination barrier over the
// ring, one per power of two below the ring's size.
const maxRounds = 32

// maxSlots bounds the data slots (workers) of one link.
const maxSlots = 8

// meta is one transfer's metadata, as the seeds pass it through
// scratchpads: source and destination host, offset, size and a flag (here
// the kind), plus what a multi-worker, multi-region protocol adds: the
// data slot of the window holding the payload, the region, and the tag
// that matches a response to its request.
//
// On the wire (four scratchpad words):
//
//	word 0: kind (4 bits) | slot (4 bits) | src (8) | dst (8) | region (8)
//	word 1: offset in the region
//	word 2: payload size in bytes
//	word 3: tag
//
// Word 0 is written last and is never zero for a valid transfer, so a zero
// word 0 means "slot free": the receiver clears it when it is done with the
// payload, and the sender reads it across the link before reusing the slot.
//
// The ring protocol's own messages, which never travel in scratchpads,
// have fields of their own: a barrier signal its round, a link notice the
// side and, for a cut, the entries taken. The ring's descriptor carries
// them in the words of region and offset (desc.go), which those messages
// do not use.
type meta struct {
	kind     kind
	slot     uint8
	src, dst uint8
	region   uint8
	off      uint32
	size     uint32
	tag      uint32

	// round is a barrier signal's (kindBarrier) round of the
	// dissemination barrier.
	round uint8
	// side is a link notice's (kindCut, kindRepair): the side of src's
	// link whose other end is dst.
	side ntb.Side
	// taken is a cut notice's: src took dst's ring entries up to, not
	// including, taken; dst resends the rest the other way round.
	taken uint32
	// linkHost is a link-down notice's (kindLinkDown, with side): the
	// host on whose side the link is.
	linkHost uint8
	// dpe is the destination PE's index among the PEs of its host (the
	// ring protocol with several PEs per host; 0 with one): the lane
	// node of the destination host lands or serves the transfer in that
	// PE's memory.
	dpe uint8
}

func (m *meta) encode() [metaWords]uint32 {
	return [metaWords]uint32{
		uint32(m.kind)<<28 | uint32(m.slot&0xF)<<24 | uint32(m.src)<<16 | uint32(m.dst)<<8 | uint32(m.region),
		m.off, m.size, m.tag,
	}
}

// errBadMeta marks metadata that cannot be a transfer of this ring.
var errBadMeta = errors.New("malformed transfer metadata")

// metaLimits is what a receiver knows to check metadata against.
type metaLimits struct {
	self     int // the receiving host
	hosts    int // ring size
	slots    int // data slots per link
	slotSize int // bytes per data slot
}

// decodeMeta reads scratchpad words written by a neighbour. Every field
// is checked against the ring's geometry; region and offset are checked
// later against the region table, by whoever lands the payload.
func decodeMeta(w [metaWords]uint32, lim metaLimits) (meta, error) {
	m := meta{
		kind: kind(w[0] >> 28), slot: uint8(w[0] >> 24 & 0xF),
		src: uint8(w[0] >> 16), dst: uint8(w[0] >> 8), region: uint8(w[0]),
		off: w[1], size: w[2], tag: w[3],
	}
	bad := func(format string, args ...any) (meta, error) {
		return meta{}, fmt.Errorf("%w: "+format, append([]any{errBadMeta}, args...)...)
	}
	switch {
	case m.kind == 0 || m.kind >= kindEnd:
		return bad("kind %d (allowed 1 to %d)", m.kind, kindEnd-1)
	case int(m.slot) >= lim.slots:
		return bad("slot %d on a link of %d slots", m.slot, lim.slots)
	case int(m.src) >= lim.hosts || int(m.dst) >= lim.hosts:
		return bad("hosts %d -> %d in a ring of %d", m.src, m.dst, lim.hosts)
	case m.src == m.dst:
		return bad("host %d sends to itself across the ring", m.src)
	case uint64(m.size) > uint64(lim.slotSize):
		return bad("size %d over the slot size %d", m.size, lim.slotSize)
	}
	if want, ok := fixedPayload[m.kind]; ok && int(m.size) != want {
		return bad("%s with a payload of %d bytes (want %d)", m.kind, m.size, want)
	}
	return m, nil
}

// fixedPayload is the payload size of the kinds whose payload is a header.
var fixedPayload = map[kind]int{
	kindPutAck:   0,
	kindGetReq:   getRequestSize,
	kindAmoReq:   amoRequestSize,
	kindAmoResp:  8,
	kindNack:     1,
	kindCut:      0,
	kindRepair:   0,
	kindLinkDown: 0,
}

// getRequest is the payload of kindGetReq: how many bytes to read at the
// metadata's region and offset. It travels in the window, relayed like
// any payload.
const getRequestSize = 4

func encodeGetRequest(b []byte, n uint32) { binary.LittleEndian.PutUint32(b, n) }

func decodeGetRequest(b []byte, slotSize int) (uint32, error) {
	if len(b) != getRequestSize {
		return 0, fmt.Errorf("%w: get request of %d bytes", errBadMeta, len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || uint64(n) > uint64(slotSize) {
		return 0, fmt.Errorf("%w: get of %d bytes (allowed 1 to %d)", errBadMeta, n, slotSize)
	}
	return n, nil
}

// amoRequest is the payload of kindAmoReq: the atomic the owner executes.
//
//	[0] op  [1] type  [2, 8) zero  [8, 16) operand  [16, 24) compare
type amoRequest struct {
	op               core.AtomicOp
	typ              core.AtomicType
	operand, compare uint64
}

const amoRequestSize = 24

func (a *amoRequest) encode(b []byte) {
	clear(b[:8])
	b[0], b[1] = byte(a.op), byte(a.typ)
	binary.LittleEndian.PutUint64(b[8:], a.operand)
	binary.LittleEndian.PutUint64(b[16:], a.compare)
}

// decodeAmoRequest reads an atomic request; op and type must be ones the
// provider executes. Alignment and bounds are the owner's to check.
func decodeAmoRequest(b []byte) (amoRequest, error) {
	if len(b) != amoRequestSize {
		return amoRequest{}, fmt.Errorf("%w: atomic request of %d bytes", errBadMeta, len(b))
	}
	a := amoRequest{op: core.AtomicOp(b[0]), typ: core.AtomicType(b[1]),
		operand: binary.LittleEndian.Uint64(b[8:]), compare: binary.LittleEndian.Uint64(b[16:])}
	if !atomics.Supports(a.op, a.typ) {
		return amoRequest{}, fmt.Errorf("%w: atomic %s on %s", errBadMeta, a.op, a.typ)
	}
	for _, x := range b[2:8] {
		if x != 0 {
			return amoRequest{}, fmt.Errorf("%w: reserved bytes of an atomic request are set", errBadMeta)
		}
	}
	return a, nil
}

// nackReason says why an owner refused a request.
type nackReason uint8

const (
	nackRegion nackReason = iota + 1 // no such region, or the range lies outside it
	nackAtomic                       // misaligned or unsupported atomic
)

func (r nackReason) err() error {
	switch r {
	case nackRegion:
		return fmt.Errorf("the owner has no such region range: %w", core.ErrOutOfBounds)
	case nackAtomic:
		return fmt.Errorf("the owner refused the atomic: %w", core.ErrInvalid)
	}
	return fmt.Errorf("the owner refused the request (reason %d): %w", r, core.ErrInvalid)
}
