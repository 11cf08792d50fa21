package tcp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// The receiving state machine (rxState), driven with frames as byte
// slices: no connection, no socket, no goroutine.

const rxRegion = 64 << 10

// newRx is a receiving state machine of PE 0 hearing PE 1, over a domain
// with region 0 of rxRegion bytes, m, and region 1 of no bytes.
func newRx() (s *rxState, m []byte) {
	d := &domain{rank: 0, npes: 2, log: slog.New(slog.DiscardHandler), set: settings{buffer: 1 << 16}}
	m = make([]byte, rxRegion)
	d.regions.Store(&[]*region{{d: d, idx: 0, size: rxRegion, mem: m}, {d: d, idx: 1}})
	return &rxState{d: d, reqs: &requestTable{peer: 1}, peer: 1}, m
}

// rxFrame has s read and handle the frame held in b.
func rxFrame(s *rxState, b []byte) (rxOut, error) {
	var hb [maxHdrLen]byte
	var o rxOut
	err := s.frame(bytes.NewReader(b), &hb, &o)
	return o, err
}

func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

// TestRxFrames is the frame handler's table: what each frame does to
// memory, the request table and the count of applied operations, and
// what it asks to send back.
func TestRxFrames(t *testing.T) {
	const id = 7
	type want struct {
		err     string // substring of the error; "" for none
		mem     []byte // memory at off after the frame, if not nil
		off     int
		reply   *header // the frame to send back, if any
		data    []byte  // its payload
		byRef   bool    // written from the region rather than copied
		applied uint64
		ack     int64 // -1: not an ack
		bye     bool
		woke    bool
		// For a request registered before the frame (prior returns it):
		// its data once ended, or that it ended with a peer-lost error.
		reqData []byte
		reqLost bool
		reqOpen bool // still outstanding
	}
	putFrame := frame(header{op: opPut, region: 0, off: 8, arg: 8}, []byte("abcdefgh"))
	for _, c := range []struct {
		name  string
		prior func(s *rxState, m []byte) *request
		frame []byte
		want  want
	}{
		{name: "put lands in the region",
			frame: putFrame,
			want:  want{mem: []byte("abcdefgh"), off: 8, applied: 1, ack: -1}},
		{name: "put-value stores the value",
			frame: frame(header{op: opPutValue, typ: 4, region: 0, off: 16, arg: 0xdeadbeef}, nil),
			want:  want{mem: binary.NativeEndian.AppendUint32(nil, 0xdeadbeef), off: 16, applied: 1, ack: -1}},
		{name: "atomic adds",
			prior: func(_ *rxState, m []byte) *request { binary.NativeEndian.PutUint64(m[24:], 10); return nil },
			frame: frame(header{op: opAtomic, typ: byte(core.Uint64), aop: byte(core.AtomicAdd), region: 0, off: 24, arg: 5}, nil),
			want:  want{mem: u64(15), off: 24, applied: 1, ack: -1}},
		{name: "fetch-add answers the old value",
			prior: func(_ *rxState, m []byte) *request { binary.NativeEndian.PutUint64(m[24:], 10); return nil },
			frame: frame(header{op: opFetch, typ: byte(core.Uint64), aop: byte(core.AtomicAdd), region: 0, off: 24, arg: 5, id: id}, nil),
			want: want{mem: u64(15), off: 24, ack: -1,
				reply: &header{op: opReply, off: id, arg: 8}, data: binary.LittleEndian.AppendUint64(nil, 10)}},
		{name: "compare-swap swaps and answers",
			frame: frame(header{op: opFetch, typ: byte(core.Int32), aop: byte(core.AtomicCSwap), region: 0, off: 32, arg: 1, cmp: 0, id: id}, nil),
			want: want{mem: binary.NativeEndian.AppendUint32(nil, 1), off: 32, ack: -1,
				reply: &header{op: opReply, off: id, arg: 8}, data: make([]byte, 8)}},
		{name: "small get is answered with a copy",
			prior: func(_ *rxState, m []byte) *request { copy(m, "0123456789"); return nil },
			frame: frame(header{op: opGet, region: 0, off: 2, arg: 4, id: id}, nil),
			want:  want{ack: -1, reply: &header{op: opReply, off: id, arg: 4}, data: []byte("2345")}},
		{name: "large get is answered from the region",
			frame: frame(header{op: opGet, region: 0, off: 0, arg: smallReply + 1, id: id}, nil),
			want:  want{ack: -1, reply: &header{op: opReply, off: id, arg: smallReply + 1}, data: make([]byte, smallReply+1), byRef: true}},
		{name: "get-value is answered with the value",
			prior: func(_ *rxState, m []byte) *request { binary.NativeEndian.PutUint16(m[40:], 0xbeef); return nil },
			frame: frame(header{op: opGetValue, typ: 2, region: 0, off: 40, id: id}, nil),
			want:  want{ack: -1, reply: &header{op: opReply, off: id, arg: 8}, data: binary.LittleEndian.AppendUint64(nil, 0xbeef)}},
		{name: "reply fills its request",
			prior: func(s *rxState, _ []byte) *request { return mustRequest(s, 4) },
			frame: frame(header{op: opReply, off: firstID, arg: 4}, []byte("wxyz")),
			want:  want{ack: -1, woke: true, reqData: []byte("wxyz")}},
		{name: "reply to a value request",
			prior: func(s *rxState, _ []byte) *request { return mustRequest(s, 0) },
			frame: frame(header{op: opReply, off: firstID, arg: 8}, u64(42)),
			want:  want{ack: -1, woke: true, reqData: u64(42)}},
		{name: "ack is handed to the send side",
			frame: frame(header{op: opAck, off: 3}, nil),
			want:  want{ack: 3, woke: true}},
		{name: "bye",
			frame: frame(header{op: opBye}, nil),
			want:  want{ack: -1, bye: true}},

		{name: "frame after bye",
			prior: func(s *rxState, _ []byte) *request { s.byeSeen = true; return nil },
			frame: putFrame,
			want:  want{err: "put after bye", ack: -1, bye: true, mem: make([]byte, 8), off: 8}},
		{name: "put past the region",
			frame: frame(header{op: opPut, region: 0, off: rxRegion - 4, arg: 8}, []byte("overflow")),
			want:  want{err: "lies outside region 0", ack: -1, mem: make([]byte, 4), off: rxRegion - 4}},
		{name: "put into an empty region",
			frame: frame(header{op: opPut, region: 1, off: 0, arg: 1}, []byte{1}),
			want:  want{err: "lies outside region 1", ack: -1}},
		{name: "region this PE lacks",
			frame: frame(header{op: opPutValue, typ: 8, region: 5, off: 0, arg: 1}, nil),
			want:  want{err: "names region 5, which this PE does not have", ack: -1}},
		{name: "misaligned atomic",
			frame: frame(header{op: opAtomic, typ: byte(core.Uint64), aop: byte(core.AtomicAdd), region: 0, off: 4, arg: 1}, nil),
			want:  want{err: "not 8-byte aligned", ack: -1, mem: make([]byte, 16), off: 0}},
		{name: "get past the region",
			frame: frame(header{op: opGet, region: 0, off: 1, arg: rxRegion, id: id}, nil),
			want:  want{err: "lies outside region 0", ack: -1}},
		{name: "reply nobody asked for",
			frame: frame(header{op: opReply, off: 99, arg: 1}, []byte{1}),
			want:  want{err: "which is not outstanding", ack: -1, woke: true}},
		{name: "reply of the wrong size ends its request",
			prior: func(s *rxState, _ []byte) *request { return mustRequest(s, 4) },
			frame: frame(header{op: opReply, off: firstID, arg: 5}, []byte("vwxyz")),
			want:  want{err: "reply of 5 bytes to a request of 4", ack: -1, woke: true, reqLost: true}},
		{name: "reply cut short ends its request",
			prior: func(s *rxState, _ []byte) *request { return mustRequest(s, 4) },
			frame: frame(header{op: opReply, off: firstID, arg: 4}, []byte("wx")),
			want:  want{err: io.ErrUnexpectedEOF.Error(), ack: -1, woke: true, reqLost: true}},
		{name: "put cut short",
			frame: putFrame[:hdrLen+3],
			want:  want{err: io.ErrUnexpectedEOF.Error(), ack: -1}},
		{name: "header cut short",
			frame: putFrame[:hdrLen-1],
			want:  want{err: io.ErrUnexpectedEOF.Error(), ack: -1}},
		{name: "request extension cut short, nothing answered",
			frame: frame(header{op: opGet, region: 0, off: 0, arg: 1, id: id}, nil)[:hdrLen+8],
			want:  want{err: io.ErrUnexpectedEOF.Error(), ack: -1}},
		{name: "a request left outstanding by another's reply",
			prior: func(s *rxState, _ []byte) *request { return mustRequest(s, 4) },
			frame: frame(header{op: opAck, off: 1}, nil),
			want:  want{ack: 1, woke: true, reqOpen: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, m := newRx()
			var r *request
			if c.prior != nil {
				r = c.prior(s, m)
			}
			o, err := rxFrame(s, c.frame)
			w := c.want
			if w.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, w.err)
			}
			if w.mem != nil {
				require.Equal(t, w.mem, m[w.off:w.off+len(w.mem)])
			}
			require.Equal(t, w.applied, s.applied, "operations applied")
			require.Equal(t, w.bye, s.byeSeen)
			require.Equal(t, w.woke, o.woke, "woke")
			if w.ack >= 0 {
				require.True(t, o.acked)
				require.Equal(t, uint64(w.ack), o.ack)
			} else {
				require.False(t, o.acked)
			}
			if w.reply == nil {
				require.Zero(t, o.reply.op, "nothing to send back")
			} else {
				require.Equal(t, *w.reply, o.reply)
				payload := o.data
				if w.byRef {
					require.Nil(t, o.data)
					payload = o.ref
					require.Same(t, &m[0], &o.ref[0], "the reply is written from the region")
				} else {
					require.Nil(t, o.ref)
				}
				require.Equal(t, w.data, payload)
			}
			if r == nil {
				return
			}
			switch {
			case w.reqOpen:
				require.Equal(t, 1, s.reqs.outstanding())
				require.Empty(t, r.ch)
			case w.reqLost:
				require.Len(t, r.ch, 1, "the request ended")
				var lost *core.PeerLostError
				require.ErrorAs(t, r.err, &lost)
				require.Equal(t, 1, lost.PE)
			default:
				require.Len(t, r.ch, 1, "the request ended")
				require.NoError(t, r.err)
				require.Equal(t, w.reqData, r.dst)
				require.Zero(t, s.reqs.outstanding())
			}
		})
	}
}

// firstID is the id of the first request of a fresh table.
const firstID = uint64(1) << 32

// mustRequest registers a blocking request for n bytes, a value if 0.
func mustRequest(s *rxState, n int) *request {
	var dst []byte
	if n > 0 {
		dst = make([]byte, n)
	}
	r, err := s.reqs.add(dst, nil, false)
	if err != nil {
		panic(err)
	}
	return r
}

// A stream of frames: each applied in order, the applied count covering
// puts, values and atomics only, and the acks due when the socket is
// drained or every ackEvery operations.
func TestRxStreamAndAcks(t *testing.T) {
	s, m := newRx()
	var stream []byte
	for i := range 3 {
		stream = append(stream, frame(header{op: opPutValue, typ: 1, region: 0, off: uint64(i), arg: uint64('a' + i)}, nil)...)
	}
	stream = append(stream, frame(header{op: opGetValue, typ: 1, region: 0, off: 1, id: 5}, nil)...)
	r := bytes.NewReader(stream)
	var hb [maxHdrLen]byte
	var o rxOut
	for r.Len() > 0 {
		require.NoError(t, s.frame(r, &hb, &o))
	}
	require.Equal(t, "abc", string(m[:3]))
	require.Equal(t, uint64(3), s.applied)
	require.Equal(t, header{op: opReply, off: 5, arg: 8}, o.reply, "the last frame's answer")
	require.Equal(t, byte('b'), o.data[0])

	for _, c := range []struct {
		applied, sent uint64
		idle          bool
		due           bool
	}{
		{applied: 0, sent: 0, idle: true, due: false},
		{applied: 3, sent: 3, idle: true, due: false},
		{applied: 3, sent: 0, idle: true, due: true},
		{applied: 3, sent: 0, idle: false, due: false},
		{applied: ackEvery, sent: 0, idle: false, due: true},
		{applied: ackEvery + 5, sent: 5, idle: false, due: true},
		{applied: ackEvery + 4, sent: 5, idle: false, due: false},
	} {
		s := &rxState{applied: c.applied, ackSent: c.sent}
		n, due := s.ackDue(c.idle)
		require.Equal(t, c.due, due, "%+v", c)
		if due {
			require.Equal(t, c.applied, n)
			require.Equal(t, c.applied, s.ackSent)
		} else {
			require.Equal(t, c.sent, s.ackSent)
		}
	}
}

// FuzzRx feeds arbitrary bytes to the receiving state machine alone, with
// no connection, frame after frame until one fails: it must not panic, must write nothing
// outside the region, must end each request at most once, and may ask to
// send back only well-formed replies.
func FuzzRx(f *testing.F) {
	all := validStream()
	f.Add(bytes.Join(all, nil))
	for _, fr := range all {
		f.Add(fr)
	}
	f.Add(frame(header{op: opGet, region: 0, off: 0, arg: rxRegion, id: 3}, nil))
	f.Add(frame(header{op: opReply, off: 1 << 32, arg: 17}, make([]byte, 17)))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, backing := fuzzDomain()
		s := &rxState{d: d, reqs: &requestTable{peer: 1}, peer: 1}
		get := mustRequest(s, 16)
		mustRequest(s, 0)
		r := bytes.NewReader(data)
		var hb [maxHdrLen]byte
		var o rxOut
		for frames := 0; ; frames++ {
			err := s.frame(r, &hb, &o)
			if err != nil {
				if r.Len() > 0 || err != io.EOF {
					require.True(t, errors.Is(err, errFrame) || err == io.ErrUnexpectedEOF || err == io.EOF, "%v", err)
				}
				break
			}
			require.LessOrEqual(t, s.applied, uint64(frames+1))
			if o.reply.op != 0 {
				require.Equal(t, uint8(opReply), o.reply.op)
				require.Equal(t, o.reply.arg, uint64(len(o.data)+len(o.ref)))
				require.True(t, o.data == nil || o.ref == nil)
				b := appendHeader(nil, &o.reply)
				_, derr := decodeHeader(b)
				require.NoError(t, derr, "the reply decodes")
			}
		}
		for i, b := range backing[:fuzzGuard] {
			require.Zero(t, b, "guard byte %d before the region was written", i)
		}
		for i, b := range backing[fuzzGuard+fuzzRegion:] {
			require.Zero(t, b, "guard byte %d after the region was written", i)
		}
		require.LessOrEqual(t, len(get.ch), 1)
	})
}

// BenchmarkRxPutValue is the receiving state machine's cost of a frame
// of the smallest kind, an 8-byte put-value, read through a buffered
// reader as from the socket: the receiver's share of a put's cost,
// without the socket. It allocates nothing.
func BenchmarkRxPutValue(b *testing.B) {
	s, _ := newRx()
	var stream []byte
	for i := range 512 {
		stream = append(stream, frame(header{op: opPutValue, typ: 8, region: 0, off: uint64(i) * 8, arg: uint64(i)}, nil)...)
	}
	src := bytes.NewReader(stream)
	br := bufio.NewReaderSize(src, 256<<10)
	var hb [maxHdrLen]byte
	var o rxOut
	b.ReportAllocs()
	for b.Loop() {
		if br.Buffered() == 0 && src.Len() == 0 {
			src.Reset(stream)
			br.Reset(src)
		}
		if err := s.frame(br, &hb, &o); err != nil {
			b.Fatal(err)
		}
	}
}
