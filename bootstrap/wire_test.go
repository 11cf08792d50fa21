package bootstrap

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/auth"
)

// validFrames returns one valid encoding of every frame type, for the
// round-trip test and as fuzz seeds.
func validFrames() [][]byte {
	var n [nonceLen]byte
	var mac [macLen]byte
	for i := range n {
		n[i], mac[i] = byte(i), byte(255-i)
	}
	return [][]byte{
		encodeHello(hello{rank: 3, size: 8, nonce: n}),
		encodeChallenge(auth.Challenge{Nonce: n, MAC: mac}),
		encodeProof(mac),
		frame(frameWelcome),
		encodeReject("rank 3 is already a member"),
		appendGather(nil, 7, 0, []byte("contribution")),
		appendGather(nil, 0, 0, nil),
		appendGather(nil, 1<<40, gatherOversize, nil),
		encodeResult(7, [][]byte{[]byte("a"), nil, []byte("ccc")}),
		encodeResult(0, [][]byte{nil, nil, nil}),
		encodeFail(fail{seq: 9, pe: 2, kind: failLost, reason: "connection closed"}),
		encodeFail(fail{seq: 9, pe: -1, kind: failTooLarge, reason: "too big"}),
		encodeLost(lost{pe: 1, reason: "gone"}),
		frame(frameBye),
		encodeAlive(0),
		encodeAlive(30 * time.Second),
	}
}

// decodeAny decodes one frame as a member of a 3-PE job would, and
// re-encodes it; it is the fuzz target's oracle.
func decodeAny(typ byte, p []byte) ([]byte, error) {
	const size = 3
	switch typ {
	case frameHello:
		h, err := decodeHello(p)
		if err != nil {
			return nil, err
		}
		return encodeHello(h), nil
	case frameChallenge:
		c, err := decodeChallenge(p)
		if err != nil {
			return nil, err
		}
		return encodeChallenge(c), nil
	case frameProof:
		m, err := decodeProof(p)
		if err != nil {
			return nil, err
		}
		return encodeProof(m), nil
	case frameAlive:
		d, err := decodeAlive(p)
		if err != nil {
			return nil, err
		}
		return encodeAlive(d), nil
	case frameWelcome, frameBye:
		if err := decodeEmpty(typ, p); err != nil {
			return nil, err
		}
		return frame(typ), nil
	case frameReject:
		r, err := decodeReject(p)
		if err != nil {
			return nil, err
		}
		return encodeReject(r), nil
	case frameGather:
		g, err := decodeGather(p)
		if err != nil {
			return nil, err
		}
		return appendGather(nil, g.seq, g.flags, g.data), nil
	case frameResult:
		seq, parts, err := decodeResult(p, size)
		if err != nil {
			return nil, err
		}
		return encodeResult(seq, parts), nil
	case frameFail:
		f, err := decodeFail(p, size)
		if err != nil {
			return nil, err
		}
		return encodeFail(f), nil
	case frameLost:
		l, err := decodeLost(p, size)
		if err != nil {
			return nil, err
		}
		return encodeLost(l), nil
	}
	panic("readFrame returned an unknown type")
}

func TestFramesRoundTrip(t *testing.T) {
	for _, f := range validFrames() {
		var hdr [headerLen]byte
		typ, p, err := readFrame(bytes.NewReader(f), &hdr, MaxFrame)
		require.NoError(t, err, "%x", f)
		again, err := decodeAny(typ, p)
		require.NoError(t, err, "%s", frameName(typ))
		require.Equal(t, f, again, "%s", frameName(typ))
	}
}

func TestFramesRejectMalformed(t *testing.T) {
	hdr := func(typ byte, n uint32) []byte {
		b := make([]byte, headerLen)
		putHeader(b, typ, 0)
		binary.BigEndian.PutUint32(b[4:], n)
		return b
	}
	withPayload := func(typ byte, p ...byte) []byte { return append(hdr(typ, uint32(len(p))), p...) }
	result := func(count uint32, rest ...byte) []byte {
		p := binary.BigEndian.AppendUint64(nil, 1)
		p = binary.BigEndian.AppendUint32(p, count)
		return withPayload(frameResult, append(p, rest...)...)
	}
	cases := []struct {
		name  string
		in    []byte
		limit int
		want  string
	}{
		{"http request", []byte("GET / HTTP/1.1\r\n\r\n"), MaxFrame, "bad magic"},
		{"zeros", make([]byte, 64), MaxFrame, "bad magic"},
		{"future version", func() []byte { b := hdr(frameBye, 0); b[2] = 2; return b }(), MaxFrame, "version 2"},
		{"type zero", hdr(0, 0), MaxFrame, "unknown frame type 0"},
		{"type too big", hdr(frameTypeEnd, 0), MaxFrame, "unknown frame type"},
		{"over handshake limit", hdr(frameHello, handshakeLimit+1), handshakeLimit, "exceeds the limit"},
		{"over max frame", hdr(frameGather, MaxFrame+1), MaxFrame, "exceeds the limit"},
		{"huge length", hdr(frameGather, 0xffffffff), MaxFrame, "exceeds the limit"},
		{"short header", []byte{'g', 's', 1}, MaxFrame, "unexpected EOF"},
		{"truncated payload", append(hdr(frameProof, macLen), 1, 2, 3), MaxFrame, "unexpected EOF"},
		{"hello too short", withPayload(frameHello, 1, 2, 3), MaxFrame, "HELLO of 3 bytes"},
		{"proof too long", withPayload(frameProof, make([]byte, macLen+1)...), MaxFrame, "a proof of 33 bytes, want 32"},
		{"welcome with payload", withPayload(frameWelcome, 1), MaxFrame, "want none"},
		{"bye with payload", withPayload(frameBye, 1), MaxFrame, "want none"},
		{"alive short", withPayload(frameAlive, 0, 0, 0, 0), MaxFrame, "want 8"},
		{"alive over an hour", withPayload(frameAlive, 0xff, 0, 0, 0, 0, 0, 0, 0), MaxFrame, "dead-after"},
		{"gather too short", withPayload(frameGather, 1, 2), MaxFrame, "GATHER of 2"},
		{"gather unknown flag", withPayload(frameGather, 0, 0, 0, 0, 0, 0, 0, 0, 0x80), MaxFrame, "unknown flags"},
		{"oversize gather with data", withPayload(frameGather, 0, 0, 0, 0, 0, 0, 0, 0, gatherOversize, 1), MaxFrame, "marked oversize"},
		{"result wrong count", result(2, 0, 0, 0, 0, 0, 0, 0, 0), MaxFrame, "2 contributions in a job of 3"},
		{"result count cannot fit", result(3, 0, 0, 0, 0), MaxFrame, "cannot hold"},
		{"result overrun", result(3, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0), MaxFrame, "overruns"},
		{"result trailing", result(3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7), MaxFrame, "trailing"},
		{"fail bad kind", withPayload(frameFail, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9), MaxFrame, "unknown kind"},
		{"fail bad pe", withPayload(frameFail, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, failLost), MaxFrame, "names PE 5"},
		{"lost bad pe", withPayload(frameLost, 0, 0, 0, 3), MaxFrame, "names PE 3"},
		{"lost not utf8", withPayload(frameLost, 0, 0, 0, 1, 0xff, 0xfe), MaxFrame, "not UTF-8"},
		{"reject too long", withPayload(frameReject, bytes.Repeat([]byte{'x'}, maxReason+1)...), MaxFrame, "exceeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr [headerLen]byte
			typ, p, err := readFrame(bytes.NewReader(tc.in), &hdr, tc.limit)
			if err == nil {
				_, err = decodeAny(typ, p)
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestClipReasonKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", maxReason) // two bytes each
	c := clipReason(s)
	require.LessOrEqual(t, len(c), maxReason)
	_, err := decodeReason(frameLost, []byte(c))
	require.NoError(t, err)
}

// FuzzReadFrame feeds arbitrary bytes to the decoder a store or member runs
// on everything it receives: it must never panic or allocate beyond the
// limit, and whatever it accepts must re-encode to the same bytes.
func FuzzReadFrame(f *testing.F) {
	for _, fr := range validFrames() {
		f.Add(fr)
	}
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 1 << 16
		r := bytes.NewReader(in)
		var hdr [headerLen]byte
		for {
			start := int(r.Size()) - r.Len()
			typ, p, err := readFrame(r, &hdr, limit)
			if err != nil {
				return // end of input, or rejected: both fine
			}
			if len(p) > limit {
				t.Fatalf("payload of %d bytes over the limit", len(p))
			}
			again, err := decodeAny(typ, p)
			if err != nil {
				continue
			}
			end := int(r.Size()) - r.Len()
			if !bytes.Equal(again, in[start:end]) {
				t.Fatalf("%s re-encodes as %x, read from %x", frameName(typ), again, in[start:end])
			}
		}
	})
}
