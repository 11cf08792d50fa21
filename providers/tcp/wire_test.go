package tcp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

const (
	fuzzRegion = 4096
	fuzzGuard  = 64
)

// fuzzTarget is a receiving connection over a byte stream, with one region
// of fuzzRegion bytes between two guard bands, one region of size 0, and
// two outstanding requests: a get of 16 bytes and a value.
type fuzzTarget struct {
	c       *conn
	backing []byte
	get     *request
}

func newFuzzTarget(t testing.TB, data []byte) *fuzzTarget {
	d, backing := fuzzDomain()
	local, remote := net.Pipe()
	t.Cleanup(func() { _ = remote.Close() })
	c := makeConn(d, 1, local)
	c.rd.in.Reader = bufio.NewReader(bytes.NewReader(data))
	c.q.ledger.sent = 8 // acks up to 8 are plausible
	ft := &fuzzTarget{c: c, backing: backing}
	var err error
	ft.get, err = c.newRequest(make([]byte, 16), nil, false)
	require.NoError(t, err)
	_, err = c.newRequest(nil, nil, false)
	require.NoError(t, err)
	return ft
}

// fuzzDomain is PE 0 of two with one region of fuzzRegion bytes, between
// two guard bands in backing, and one region of size 0.
func fuzzDomain() (d *domain, backing []byte) {
	d = &domain{rank: 0, npes: 2, log: slog.New(slog.DiscardHandler), set: settings{buffer: 1 << 16}}
	backing = make([]byte, fuzzRegion+2*fuzzGuard)
	m := backing[fuzzGuard : fuzzGuard+fuzzRegion : fuzzGuard+fuzzRegion]
	d.regions.Store(&[]*region{{d: d, idx: 0, size: fuzzRegion, mem: m}, {d: d, idx: 1}})
	return d, backing
}

// frame encodes one frame with its payload.
func frame(h header, payload []byte) []byte {
	return append(appendHeader(nil, &h), payload...)
}

// validStream is a well-formed stream exercising every operation.
func validStream() [][]byte {
	id0, id1 := uint64(1)<<32, uint64(2)<<32|1
	return [][]byte{
		frame(header{op: opPut, region: 0, off: 8, arg: 8}, []byte("abcdefgh")),
		frame(header{op: opPutValue, typ: 4, region: 0, off: 16, arg: 0xdeadbeef}, nil),
		frame(header{op: opAtomic, typ: byte(core.Uint64), aop: byte(core.AtomicAdd), region: 0, off: 24, arg: 5}, nil),
		frame(header{op: opGet, region: 0, off: 0, arg: 32, id: 7}, nil),
		frame(header{op: opGetValue, typ: 8, region: 0, off: 8, id: 8}, nil),
		frame(header{op: opFetch, typ: byte(core.Int32), aop: byte(core.AtomicCSwap), region: 0, off: 32, arg: 1, cmp: 0, id: 9}, nil),
		frame(header{op: opReply, off: id0, arg: 16}, bytes.Repeat([]byte{7}, 16)),
		frame(header{op: opReply, off: id1, arg: 8}, make([]byte, 8)),
		frame(header{op: opAck, off: 3}, nil),
		frame(header{op: opBye}, nil),
	}
}

// FuzzFrames feeds arbitrary bytes to a connection's progress: whatever
// arrives, it must not panic, must write nothing outside the region, and
// must either apply the frames or drop the connection with a
// protocol or I/O error.
func FuzzFrames(f *testing.F) {
	all := validStream()
	f.Add(bytes.Join(all, nil))
	for _, fr := range all {
		f.Add(fr)
	}
	f.Add(frame(header{op: opPut, region: 0, off: fuzzRegion - 4, arg: 8}, make([]byte, 8)))
	f.Add(frame(header{op: opPut, region: 1, off: 0, arg: 1}, []byte{1}))
	f.Add(frame(header{op: opAtomic, typ: byte(core.Uint64), aop: byte(core.AtomicAdd), region: 0, off: 4}, nil))
	f.Fuzz(fuzzStream)
}

// fuzzStream feeds data to a connection's reader as a peer's stream: the
// connection ends with it, applying its frames or dropping the
// connection, and nothing is written outside the region.
func fuzzStream(t *testing.T, data []byte) {
	ft := newFuzzTarget(t, data)
	ft.c.readLoop()
	require.NotNil(t, ft.c.failed.Load(), "the connection ends with its stream")
	for i, b := range ft.backing[:fuzzGuard] {
		require.Zero(t, b, "guard byte %d before the region was written", i)
	}
	for i, b := range ft.backing[fuzzGuard+fuzzRegion:] {
		require.Zero(t, b, "guard byte %d after the region was written", i)
	}
}

// TestValidStream checks that the fuzz seed does what it says: every
// frame applied, replies queued, requests completed, a clean end.
func TestValidStream(t *testing.T) {
	ft := newFuzzTarget(t, bytes.Join(validStream(), nil))
	c := ft.c
	c.read()
	require.True(t, c.rd.end)
	require.Equal(t, "it closed its connection", c.failed.Load().Reason, "a clean end")
	m := ft.backing[fuzzGuard:]
	require.Equal(t, "abcdefgh", string(m[8:16]))
	require.Equal(t, uint32(0xdeadbeef), binary.NativeEndian.Uint32(m[16:]))
	require.Equal(t, uint64(5), binary.NativeEndian.Uint64(m[24:]))
	require.Equal(t, uint32(1), binary.NativeEndian.Uint32(m[32:]), "compare-swap of 0 to 1")
	require.Equal(t, bytes.Repeat([]byte{7}, 16), ft.get.dst)
	require.Len(t, ft.get.ch, 1, "the get was completed")
	require.Equal(t, uint64(3), c.q.ledger.acked)
	require.True(t, c.rd.rx.byeSeen)
	require.Equal(t, uint64(3), c.rd.rx.applied, "put, put-value and atomic")
	// Three replies (get, get-value, fetch) and an ack were queued.
	n := 0
	for b := c.q.out; len(b) > 0; n++ {
		h, err := decodeHeader(b)
		require.NoError(t, err)
		b = b[hdrLen:]
		if h.op == opReply {
			b = b[h.arg:]
		}
	}
	require.Equal(t, 4, n)
}

// TestDecodeRejects lists malformed headers and checks each is refused
// by the decoder, naming what is wrong.
func TestDecodeRejects(t *testing.T) {
	bad := map[string]header{
		"unknown operation":         {op: 0},
		"unknown operation 200":     {op: 200},
		"put with a type":           {op: opPut, typ: 1},
		"value of 3 bytes":          {op: opPutValue, typ: 3},
		"float add":                 {op: opAtomic, typ: byte(core.Float64), aop: byte(core.AtomicAdd)},
		"non-fetching compare-swap": {op: opAtomic, typ: byte(core.Uint64), aop: byte(core.AtomicCSwap)},
		"ack with a region":         {op: opAck, region: 1},
		"bye with a count":          {op: opBye, off: 1},
	}
	for name, h := range bad {
		b := appendHeader(nil, &h)
		_, err := decodeHeader(b[:hdrLen])
		require.ErrorIs(t, err, errFrame, name)
	}
	b := appendHeader(nil, &header{op: opPut})
	b[3] = 1
	_, err := decodeHeader(b)
	require.ErrorContains(t, err, "reserved byte")
}
