package ntbring

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

var testLim = metaLimits{self: 2, hosts: 5, slots: 4, slotSize: 64 << 10}

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []meta{
		{kind: kindPut, slot: 3, src: 0, dst: 4, region: 7, off: 1 << 31, size: 64 << 10, tag: 0xdeadbeef},
		{kind: kindPutAck, slot: 0, src: 4, dst: 0, tag: 1},
		{kind: kindGetReq, slot: 1, src: 1, dst: 2, off: 12, size: getRequestSize, tag: 9},
		{kind: kindAmoReq, slot: 2, src: 3, dst: 2, region: 255, off: 8, size: amoRequestSize},
		{kind: kindAmoResp, src: 2, dst: 3, size: 8},
		{kind: kindNack, src: 2, dst: 3, size: 1},
		{kind: kindGetResp, src: 2, dst: 1, size: 0},
	} {
		got, err := decodeMeta(m.encode(), testLim)
		require.NoError(t, err, "%+v", m)
		require.Equal(t, m, got)
		require.NotZero(t, m.encode()[0], "word 0 of a transfer is never the free mark")
	}
}

func TestMetaRejects(t *testing.T) {
	good := meta{kind: kindPut, slot: 1, src: 0, dst: 3, size: 100}
	for name, mod := range map[string]func(*meta){
		"free slot":       func(m *meta) { *m = meta{} },
		"kind 0":          func(m *meta) { m.kind = 0 },
		"unknown kind":    func(m *meta) { m.kind = kindEnd },
		"slot":            func(m *meta) { m.slot = 4 },
		"source":          func(m *meta) { m.src = 5 },
		"destination":     func(m *meta) { m.dst = 200 },
		"to itself":       func(m *meta) { m.src = 3 },
		"size":            func(m *meta) { m.size = 64<<10 + 1 },
		"ack with data":   func(m *meta) { m.kind, m.size = kindPutAck, 1 },
		"short amo":       func(m *meta) { m.kind, m.size = kindAmoReq, amoRequestSize-1 },
		"get req of 8":    func(m *meta) { m.kind, m.size = kindGetReq, 8 },
		"amo answer of 4": func(m *meta) { m.kind, m.size = kindAmoResp, 4 },
	} {
		m := good
		mod(&m)
		_, err := decodeMeta(m.encode(), testLim)
		require.ErrorIs(t, err, errBadMeta, name)
	}
}

func TestRequests(t *testing.T) {
	var b [getRequestSize]byte
	encodeGetRequest(b[:], 4096)
	n, err := decodeGetRequest(b[:], 4096)
	require.NoError(t, err)
	require.Equal(t, uint32(4096), n)
	_, err = decodeGetRequest(b[:], 4095)
	require.ErrorIs(t, err, errBadMeta)
	encodeGetRequest(b[:], 0)
	_, err = decodeGetRequest(b[:], 4096)
	require.ErrorIs(t, err, errBadMeta, "a get of nothing never travels")

	a := amoRequest{op: core.AtomicCSwap, typ: core.Int64, operand: 1<<63 | 5, compare: 7}
	var r [amoRequestSize]byte
	a.encode(r[:])
	got, err := decodeAmoRequest(r[:])
	require.NoError(t, err)
	require.Equal(t, a, got)
	for name, mod := range map[string]func([]byte){
		"op":        func(b []byte) { b[0] = 0 },
		"type":      func(b []byte) { b[1] = 99 },
		"float add": func(b []byte) { b[0], b[1] = byte(core.AtomicAdd), byte(core.Float64) },
		"reserved":  func(b []byte) { b[5] = 1 },
	} {
		bad := r
		mod(bad[:])
		_, err := decodeAmoRequest(bad[:])
		require.ErrorIs(t, err, errBadMeta, name)
	}
	_, err = decodeAmoRequest(r[:amoRequestSize-1])
	require.ErrorIs(t, err, errBadMeta)
}

func TestNackReasons(t *testing.T) {
	require.ErrorIs(t, nackRegion.err(), core.ErrOutOfBounds)
	require.ErrorIs(t, nackAtomic.err(), core.ErrInvalid)
	require.ErrorIs(t, nackReason(77).err(), core.ErrInvalid)
}

// FuzzDecodeMeta feeds scratchpad words a neighbour might have left: a
// decoded transfer must satisfy every limit a receiver relies on before
// it indexes a window, and encode back to the same words.
func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []meta{
		{kind: kindPut, slot: 3, src: 0, dst: 4, region: 7, off: 100, size: 64 << 10, tag: 5},
		{kind: kindGetReq, slot: 1, src: 1, dst: 2, size: getRequestSize},
		{kind: kindAmoResp, src: 2, dst: 3, size: 8},
	} {
		w := m.encode()
		f.Add(w[0], w[1], w[2], w[3])
	}
	f.Fuzz(func(t *testing.T, w0, w1, w2, w3 uint32) {
		w := [metaWords]uint32{w0, w1, w2, w3}
		m, err := decodeMeta(w, testLim)
		if err != nil {
			require.ErrorIs(t, err, errBadMeta)
			return
		}
		require.True(t, m.kind > 0 && m.kind < kindEnd)
		require.Less(t, int(m.slot), testLim.slots)
		require.Less(t, int(m.src), testLim.hosts)
		require.Less(t, int(m.dst), testLim.hosts)
		require.NotEqual(t, m.src, m.dst)
		require.LessOrEqual(t, int(m.size), testLim.slotSize)
		require.Equal(t, w, m.encode())
	})
}

// FuzzDecodeRequest feeds the headers that travel in a window, relayed
// host to host: get and atomic requests. Garbage is an error, never a
// panic, and what decodes is something the owner can execute.
func FuzzDecodeRequest(f *testing.F) {
	var g [getRequestSize]byte
	encodeGetRequest(g[:], 512)
	f.Add(g[:])
	var a [amoRequestSize]byte
	(&amoRequest{op: core.AtomicAdd, typ: core.Uint32, operand: 3}).encode(a[:])
	f.Add(a[:])
	(&amoRequest{op: core.AtomicSwap, typ: core.Float64, operand: 1}).encode(a[:])
	f.Add(a[:])
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := decodeGetRequest(b, 4096); err == nil {
			require.Len(t, b, getRequestSize)
			require.True(t, n > 0 && n <= 4096)
			require.Equal(t, n, binary.LittleEndian.Uint32(b))
		} else {
			require.ErrorIs(t, err, errBadMeta)
		}
		r, err := decodeAmoRequest(b)
		if err != nil {
			require.ErrorIs(t, err, errBadMeta)
			return
		}
		require.True(t, atomics.Supports(r.op, r.typ))
		var back [amoRequestSize]byte
		r.encode(back[:])
		require.Equal(t, b, back[:])
	})
}
