package bootstrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/goshmem/goshmem/internal/auth"
)

// The store's wire format. Every message is one frame:
//
//	offset size field
//	0      2    magic "gs" (0x67 0x73): rejects strangers at the first bytes
//	2      1    protocol version (wireVersion)
//	3      1    frame type (frameHello ... frameBye)
//	4      4    payload length, big endian, at most the reader's limit
//	8      n    payload, laid out per type (see the encode functions)
//
// Integers are big endian. Each type's payload has an exact length or an
// exact structure; decoders reject anything else, so a frame either decodes
// to exactly what its encoder would have produced or is an error.
const (
	wireMagic0  = 'g'
	wireMagic1  = 's'
	wireVersion = 1
	headerLen   = 8

	// MaxFrame is the largest payload a frame may carry. It bounds what
	// one message can make the receiver allocate; an allgather whose
	// result would exceed it fails on every member.
	MaxFrame = 16 << 20

	// handshakeLimit bounds frames from a peer that has not yet proved
	// the secret: a stranger cannot make the server allocate more.
	handshakeLimit = 1024

	maxReason = 512 // bytes of text in REJECT, FAIL and LOST
	nonceLen  = auth.NonceLen
	macLen    = auth.MACLen
)

// Frame types.
const (
	frameHello     byte = 1 + iota // C->S: rank, size, client nonce
	frameChallenge                 // S->C: server nonce, server proof
	frameProof                     // C->S: client proof
	frameWelcome                   // S->C: joined
	frameReject                    // S->C: reason; the server then disconnects
	frameGather                    // C->S: seq, flags, contribution
	frameResult                    // S->C: seq, every contribution in rank order
	frameFail                      // S->C: seq, culprit PE, kind, reason
	frameLost                      // S->C (async): PE, reason; C->S: the member's transport lost PE
	frameBye                       // C->S: clean close; the server then disconnects
	frameAlive                     // C<->S: liveness, with the sender's dead-after (see encodeAlive)
	frameTypeEnd
)

var frameNames = [...]string{
	frameHello: "HELLO", frameChallenge: "CHALLENGE", frameProof: "PROOF",
	frameWelcome: "WELCOME", frameReject: "REJECT", frameGather: "GATHER",
	frameResult: "RESULT", frameFail: "FAIL", frameLost: "LOST", frameBye: "BYE",
	frameAlive: "ALIVE",
}

func frameName(t byte) string {
	if t > 0 && t < frameTypeEnd {
		return frameNames[t]
	}
	return fmt.Sprintf("type %d", t)
}

// Flags of a GATHER frame.
const (
	// gatherOversize: the member's contribution was too large to send; the
	// server fails the round on every member instead of leaving them
	// waiting.
	gatherOversize byte = 1 << iota

	gatherKnownFlags = gatherOversize
)

// Kinds of FAIL.
const (
	failLost      byte = 1 + iota // a member was lost
	failFinalized                 // a member closed before this collective
	failTooLarge                  // the result would exceed MaxFrame
	failKindEnd
)

// errWire is wrapped by every decoding error.
var errWire = errors.New("bootstrap wire")

func wireErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errWire, fmt.Sprintf(format, a...))
}

// putHeader writes a frame header into b[:headerLen].
func putHeader(b []byte, typ byte, n int) {
	b[0], b[1], b[2], b[3] = wireMagic0, wireMagic1, wireVersion, typ
	binary.BigEndian.PutUint32(b[4:8], uint32(n))
}

// parseHeader validates a header and returns its type and payload length.
func parseHeader(h []byte, limit int) (byte, int, error) {
	if h[0] != wireMagic0 || h[1] != wireMagic1 {
		return 0, 0, wireErr("bad magic %#02x%02x: not a goshmem bootstrap peer", h[0], h[1])
	}
	if h[2] != wireVersion {
		return 0, 0, wireErr("protocol version %d, this side speaks %d", h[2], wireVersion)
	}
	typ := h[3]
	if typ == 0 || typ >= frameTypeEnd {
		return 0, 0, wireErr("unknown frame type %d", typ)
	}
	n := binary.BigEndian.Uint32(h[4:8])
	if uint64(n) > uint64(limit) {
		return 0, 0, wireErr("%s frame of %d bytes exceeds the limit of %d", frameName(typ), n, limit)
	}
	return typ, int(n), nil
}

// readFrame reads one frame of at most limit payload bytes. The payload is
// freshly allocated: callers may keep it.
func readFrame(r io.Reader, hdr *[headerLen]byte, limit int) (byte, []byte, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	typ, n, err := parseHeader(hdr[:], limit)
	if err != nil {
		return 0, nil, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return typ, p, nil
}

// frame returns a complete frame: header followed by payload.
func frame(typ byte, payload ...[]byte) []byte {
	n := 0
	for _, p := range payload {
		n += len(p)
	}
	b := make([]byte, headerLen, headerLen+n)
	putHeader(b, typ, n)
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

// The handshake (internal/auth's, protocol auth.Bootstrap) opens every
// connection:
//
//	C->S HELLO     rank, size, nc    (nc: a fresh auth.NewNonce)
//	S->C CHALLENGE ns, the server's proof over HELLO's payload and ns
//	C->S PROOF     the client's proof over the same
//	S->C WELCOME   or REJECT(reason), then the server disconnects
//
// The client checks the server's proof before it sends its own, and the
// server tells only a peer that proved the secret why it cannot join.

// hello is the first frame of a client.
type hello struct {
	rank, size uint32
	nonce      auth.Nonce
}

func encodeHello(h hello) []byte {
	var p [8 + nonceLen]byte
	binary.BigEndian.PutUint32(p[0:], h.rank)
	binary.BigEndian.PutUint32(p[4:], h.size)
	copy(p[8:], h.nonce[:])
	return frame(frameHello, p[:])
}

func decodeHello(p []byte) (hello, error) {
	var h hello
	if len(p) != 8+nonceLen {
		return h, wireErr("HELLO of %d bytes, want %d", len(p), 8+nonceLen)
	}
	h.rank = binary.BigEndian.Uint32(p[0:])
	h.size = binary.BigEndian.Uint32(p[4:])
	copy(h.nonce[:], p[8:])
	return h, nil
}

// encodeChallenge frames the server's answer to HELLO: its nonce and its
// proof.
func encodeChallenge(c auth.Challenge) []byte { return frame(frameChallenge, c.Append(nil)) }

func decodeChallenge(p []byte) (auth.Challenge, error) {
	c, err := auth.ParseChallenge(p)
	if err != nil {
		return c, fmt.Errorf("%w: CHALLENGE: %w", errWire, err)
	}
	return c, nil
}

func encodeProof(mac auth.MAC) []byte { return frame(frameProof, mac[:]) }

func decodeProof(p []byte) (auth.MAC, error) {
	m, err := auth.ParseProof(p)
	if err != nil {
		return m, fmt.Errorf("%w: PROOF: %w", errWire, err)
	}
	return m, nil
}

func decodeEmpty(typ byte, p []byte) error {
	if len(p) != 0 {
		return wireErr("%s with a payload of %d bytes, want none", frameName(typ), len(p))
	}
	return nil
}

// clipReason shortens s to fit a reason field without splitting a rune.
func clipReason(s string) string {
	if len(s) <= maxReason {
		return s
	}
	s = s[:maxReason]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func decodeReason(typ byte, p []byte) (string, error) {
	if len(p) > maxReason {
		return "", wireErr("%s reason of %d bytes exceeds %d", frameName(typ), len(p), maxReason)
	}
	if !utf8.Valid(p) {
		return "", wireErr("%s reason is not UTF-8", frameName(typ))
	}
	return string(p), nil
}

func encodeReject(reason string) []byte { return frame(frameReject, []byte(clipReason(reason))) }

func decodeReject(p []byte) (string, error) { return decodeReason(frameReject, p) }

// gatherHeaderLen is the fixed part of a GATHER payload: seq and flags.
const gatherHeaderLen = 9

// appendGather appends a GATHER frame to b, reusing its capacity.
func appendGather(b []byte, seq uint64, flags byte, data []byte) []byte {
	n := gatherHeaderLen + len(data)
	b = append(b, make([]byte, headerLen+gatherHeaderLen)...)
	h := b[len(b)-headerLen-gatherHeaderLen:]
	putHeader(h, frameGather, n)
	binary.BigEndian.PutUint64(h[headerLen:], seq)
	h[headerLen+8] = flags
	return append(b, data...)
}

type gather struct {
	seq   uint64
	flags byte
	data  []byte // aliases the payload
}

func decodeGather(p []byte) (gather, error) {
	if len(p) < gatherHeaderLen {
		return gather{}, wireErr("GATHER of %d bytes, want at least %d", len(p), gatherHeaderLen)
	}
	g := gather{seq: binary.BigEndian.Uint64(p), flags: p[8], data: p[gatherHeaderLen:]}
	if g.flags&^gatherKnownFlags != 0 {
		return gather{}, wireErr("GATHER with unknown flags %#x", g.flags)
	}
	if g.flags&gatherOversize != 0 && len(g.data) != 0 {
		return gather{}, wireErr("GATHER marked oversize carries %d bytes", len(g.data))
	}
	return g, nil
}

// resultLen is the payload length of a RESULT carrying parts.
func resultLen(parts [][]byte) int {
	n := 12
	for _, p := range parts {
		n += 4 + len(p)
	}
	return n
}

// encodeResult builds a RESULT frame: seq, count, then count times
// (length, bytes). The caller checks resultLen against MaxFrame.
func encodeResult(seq uint64, parts [][]byte) []byte {
	n := resultLen(parts)
	b := make([]byte, headerLen+12, headerLen+n)
	putHeader(b, frameResult, n)
	binary.BigEndian.PutUint64(b[headerLen:], seq)
	binary.BigEndian.PutUint32(b[headerLen+8:], uint32(len(parts)))
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// decodeResult splits a RESULT payload into its size contributions, which
// alias p. Counts and lengths must account for every byte exactly.
func decodeResult(p []byte, size int) (uint64, [][]byte, error) {
	if len(p) < 12 {
		return 0, nil, wireErr("RESULT of %d bytes, want at least 12", len(p))
	}
	seq := binary.BigEndian.Uint64(p)
	count := binary.BigEndian.Uint32(p[8:])
	if uint64(count) != uint64(size) {
		return 0, nil, wireErr("RESULT with %d contributions in a job of %d", count, size)
	}
	// Each contribution needs at least its length word: refuse before
	// allocating if the payload cannot hold them.
	rest := p[12:]
	if uint64(count)*4 > uint64(len(rest)) {
		return 0, nil, wireErr("RESULT of %d bytes cannot hold %d contributions", len(p), count)
	}
	parts := make([][]byte, count)
	for i := range parts {
		if len(rest) < 4 {
			return 0, nil, wireErr("RESULT truncated at contribution %d", i)
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return 0, nil, wireErr("RESULT contribution %d of %d bytes overruns the frame", i, n)
		}
		parts[i] = rest[:n:n]
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return 0, nil, wireErr("RESULT has %d trailing bytes", len(rest))
	}
	return seq, parts, nil
}

// fail tells a member that collective seq cannot complete.
type fail struct {
	seq    uint64
	pe     int32 // the member that caused it, or -1
	kind   byte
	reason string
}

func encodeFail(f fail) []byte {
	r := clipReason(f.reason)
	var p [13]byte
	binary.BigEndian.PutUint64(p[0:], f.seq)
	binary.BigEndian.PutUint32(p[8:], uint32(f.pe))
	p[12] = f.kind
	return frame(frameFail, p[:], []byte(r))
}

func decodeFail(p []byte, size int) (fail, error) {
	if len(p) < 13 {
		return fail{}, wireErr("FAIL of %d bytes, want at least 13", len(p))
	}
	f := fail{
		seq:  binary.BigEndian.Uint64(p),
		pe:   int32(binary.BigEndian.Uint32(p[8:])),
		kind: p[12],
	}
	if f.pe < -1 || int64(f.pe) >= int64(size) {
		return fail{}, wireErr("FAIL names PE %d in a job of %d", f.pe, size)
	}
	if f.kind == 0 || f.kind >= failKindEnd {
		return fail{}, wireErr("FAIL of unknown kind %d", f.kind)
	}
	var err error
	f.reason, err = decodeReason(frameFail, p[13:])
	return f, err
}

// lost announces that a member vanished without finalizing.
type lost struct {
	pe     uint32
	reason string
}

func encodeLost(l lost) []byte {
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], l.pe)
	return frame(frameLost, p[:], []byte(clipReason(l.reason)))
}

func decodeLost(p []byte, size int) (lost, error) {
	if len(p) < 4 {
		return lost{}, wireErr("LOST of %d bytes, want at least 4", len(p))
	}
	l := lost{pe: binary.BigEndian.Uint32(p)}
	if uint64(l.pe) >= uint64(size) {
		return lost{}, wireErr("LOST names PE %d in a job of %d", l.pe, size)
	}
	var err error
	l.reason, err = decodeReason(frameLost, p[4:])
	return l, err
}

// maxDeadAfter bounds the dead-after an ALIVE may announce.
const maxDeadAfter = time.Hour

// encodeAlive is the liveness frame: 8 bytes, the sender's dead-after in
// milliseconds. A store that watches its members sends it with its
// dead-after, and members then watch the store with the same; a member
// sends 0.
func encodeAlive(deadAfter time.Duration) []byte {
	var p [8]byte
	binary.BigEndian.PutUint64(p[:], uint64(deadAfter/time.Millisecond))
	return frame(frameAlive, p[:])
}

func decodeAlive(p []byte) (time.Duration, error) {
	if len(p) != 8 {
		return 0, wireErr("ALIVE of %d bytes, want 8", len(p))
	}
	ms := binary.BigEndian.Uint64(p)
	if ms > uint64(maxDeadAfter/time.Millisecond) {
		return 0, wireErr("ALIVE announces a dead-after of %dms, over %v", ms, maxDeadAfter)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
