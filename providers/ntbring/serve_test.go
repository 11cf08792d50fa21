package ntbring

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// serveHost is host 0 of a ring of two, without links: enough to hand
// transfers to serve and answered directly.
func serveHost(t testing.TB) (*domain, *region) {
	d := &domain{rank: 0, npes: 2, s: settings{slotSize: 4096}, pending: newPending(),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), bufs: bufPool{size: 4096}}
	r := &region{dom: d, idx: 0, size: 4096, mem: mem.Bytes(make([]uint64, 512))}
	d.regions = []*region{r}
	return d, r
}

func TestServe(t *testing.T) {
	d, r := serveHost(t)
	req := meta{src: 1, dst: 0, tag: 9}

	m := req
	m.kind, m.off, m.size = kindPut, 16, 3
	reply, out, _, err := d.serve(m, []byte{1, 2, 3})
	require.NoError(t, err)
	require.Equal(t, meta{kind: kindPutAck, src: 0, dst: 1, tag: 9}, reply)
	require.Empty(t, out)
	require.Equal(t, []byte{1, 2, 3}, r.mem[16:19])

	m.kind, m.off = kindGetReq, 16
	var g [getRequestSize]byte
	encodeGetRequest(g[:], 3)
	reply, out, _, err = d.serve(m, g[:])
	require.NoError(t, err)
	require.Equal(t, kindGetResp, reply.kind)
	require.Equal(t, []byte{1, 2, 3}, out)

	var a [amoRequestSize]byte
	(&amoRequest{op: core.AtomicAdd, typ: core.Uint64, operand: 5}).encode(a[:])
	m.kind, m.off = kindAmoReq, 24
	reply, out, _, err = d.serve(m, a[:])
	require.NoError(t, err)
	require.Equal(t, kindAmoResp, reply.kind)
	require.Equal(t, uint64(0), binary.LittleEndian.Uint64(out))
	require.Equal(t, uint64(5), mem.LoadValue(r.mem, 24, 8))

	for name, c := range map[string]struct {
		m       meta
		payload []byte
		reason  nackReason
	}{
		"put past the end":    {meta{kind: kindPut, off: 4095, size: 2}, []byte{1, 2}, nackRegion},
		"put to region 3":     {meta{kind: kindPut, region: 3, size: 1}, []byte{1}, nackRegion},
		"get past the end":    {meta{kind: kindGetReq, off: 4094, size: getRequestSize}, g[:], nackRegion},
		"misaligned atomic":   {meta{kind: kindAmoReq, off: 4, size: amoRequestSize}, a[:], nackAtomic},
		"atomic past the end": {meta{kind: kindAmoReq, off: 4096, size: amoRequestSize}, a[:], nackRegion},
	} {
		c.m.src, c.m.dst = 1, 0
		reply, out, _, err := d.serve(c.m, c.payload)
		require.NoError(t, err, name)
		require.Equal(t, kindNack, reply.kind, name)
		require.Equal(t, []byte{byte(c.reason)}, out, name)
	}
	_, _, _, err = d.serve(meta{kind: kindAmoReq, src: 1, off: 8, size: 3}, []byte{1, 2, 3})
	require.ErrorIs(t, err, errBadMeta)
	_, _, _, err = d.serve(meta{kind: kindPutAck, src: 1}, nil)
	require.ErrorIs(t, err, errBadMeta, "an answer is not a request")
}

func TestAnswered(t *testing.T) {
	d, _ := serveHost(t)
	ctr := &core.Counter{}
	o := &op{pe: 1, ctr: ctr, dst: make([]byte, 3)}
	o.seq = ctr.Issue(1)
	d.pending.add(o)
	// From the wrong host, or of the wrong length: dropped, op still waits.
	d.answered(meta{kind: kindGetResp, src: 0, tag: o.tag}, []byte{1, 2, 3})
	d.answered(meta{kind: kindGetResp, src: 1, tag: o.tag}, []byte{1, 2})
	require.Equal(t, uint64(2), d.drops.Load())
	require.Zero(t, ctr.Completed())
	d.answered(meta{kind: kindGetResp, src: 1, tag: o.tag}, []byte{1, 2, 3})
	require.Equal(t, uint64(1), ctr.Completed())
	require.Equal(t, []byte{1, 2, 3}, o.dst)
	d.answered(meta{kind: kindGetResp, src: 1, tag: o.tag}, []byte{4, 5, 6})
	require.Equal(t, uint64(3), d.drops.Load(), "a second answer finds no op")
	require.Equal(t, []byte{1, 2, 3}, o.dst)

	o = &op{pe: 1, ctr: ctr}
	o.seq = ctr.Issue(1)
	d.pending.add(o)
	d.answered(meta{kind: kindNack, src: 1, tag: o.tag}, []byte{byte(nackRegion)})
	require.ErrorIs(t, ctr.Quiet(0, nil), core.ErrOutOfBounds)
}

// FuzzServe runs whatever a neighbour could leave in the scratchpads and
// the window through the receive path of a host: decode, then serve or
// answered. Nothing panics, and no byte of the region outside the range
// the metadata names changes.
func FuzzServe(f *testing.F) {
	add := func(m meta, payload []byte) {
		w := m.encode()
		f.Add(w[0], w[1], w[2], w[3], payload)
	}
	add(meta{kind: kindPut, src: 1, dst: 0, off: 100, size: 4}, []byte{1, 2, 3, 4})
	var g [getRequestSize]byte
	encodeGetRequest(g[:], 64)
	add(meta{kind: kindGetReq, src: 1, dst: 0, off: 8, size: getRequestSize}, g[:])
	var a [amoRequestSize]byte
	(&amoRequest{op: core.AtomicXor, typ: core.Int32, operand: 0xff}).encode(a[:])
	add(meta{kind: kindAmoReq, src: 1, dst: 0, off: 64, size: amoRequestSize}, a[:])
	add(meta{kind: kindAmoResp, src: 1, dst: 0, size: 8, tag: 1}, make([]byte, 8))
	f.Fuzz(func(t *testing.T, w0, w1, w2, w3 uint32, payload []byte) {
		d, r := serveHost(t)
		for i := range r.mem {
			r.mem[i] = 0xAA
		}
		m, err := decodeMeta([metaWords]uint32{w0, w1, w2, w3}, metaLimits{self: 0, hosts: 2, slots: 8, slotSize: 4096})
		if err != nil || int(m.size) > len(payload) {
			return
		}
		payload = payload[:m.size]
		if m.kind.isResponse() {
			d.answered(m, payload)
			require.Equal(t, bytes.Repeat([]byte{0xAA}, 4096), r.mem)
			return
		}
		reply, out, _, err := d.serve(m, payload)
		if err != nil {
			require.ErrorIs(t, err, errBadMeta)
		} else {
			require.Equal(t, m.src, reply.dst)
			require.Equal(t, int(reply.size), len(out))
		}
		lo, hi := int(m.off), int(m.off)+int(m.size)
		if m.kind == kindAmoReq {
			hi = int(m.off) + 8
		}
		for i, b := range r.mem {
			if (i < lo || i >= hi) && b != 0xAA {
				t.Fatalf("byte %d outside [%d, %d) changed by %s", i, lo, hi, m.kind)
			}
		}
	})
}

// An atomic's answer and a nack take a small buffer, not one of a whole
// data slot: with slots of 256K, zeroing a fresh one whenever the pool
// came up empty was most of the time a stream of atomics took. Each size
// goes back to its own pool.
func TestBufPoolSizes(t *testing.T) {
	p := bufPool{size: 256 << 10}
	for _, n := range []int{1, 8, smallBuf} {
		b := p.get(n)
		require.Len(t, *b, n)
		require.Equal(t, smallBuf, cap(*b), "a buffer of %d bytes", n)
		p.put(b)
	}
	for _, n := range []int{smallBuf + 1, 4096, 256 << 10} {
		b := p.get(n)
		require.Len(t, *b, n)
		require.Equal(t, 256<<10, cap(*b), "a buffer of %d bytes", n)
		p.put(b)
	}
	p.put(nil)
	d := &domain{bufs: bufPool{size: 256 << 10}}
	_, out, buf, err := d.nack(meta{}, nackRegion)
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, smallBuf, cap(*buf))
}
