package tcp

import (
	"bufio"
	"bytes"
	"testing"
)

// The parts of a get's round trip apart from the wire, each timed alone,
// for the breakdown of a get's latency above the floor of TCP itself
// (docs/measuring.md, "Where a get's time goes over tcp"). None
// allocates.

// BenchmarkPartRequestTable is the request table's share of a blocking
// request: add, take by the reply's id, release.
func BenchmarkPartRequestTable(b *testing.B) {
	var t requestTable
	b.ReportAllocs()
	for b.Loop() {
		r, err := t.add(nil, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		if t.take(r.id) != r {
			b.Fatal("request not found by its id")
		}
		t.release(r)
	}
}

// BenchmarkPartRxGetValue is the target's share of an 8-byte get apart
// from the socket: its request decoded and its reply made (rxState).
func BenchmarkPartRxGetValue(b *testing.B) {
	s, _ := newRx()
	var stream []byte
	for i := range 512 {
		stream = append(stream, frame(header{op: opGetValue, typ: 8, region: 0, off: uint64(i%64) * 8, id: uint64(i)}, nil)...)
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
		o.reply.op = 0
	}
}

// BenchmarkPartHandoff is one goroutine waking another through a
// request's channel and being woken back: ns/op is two hand-offs, what a
// reply read by the reader goroutine costs its issuer at each end.
func BenchmarkPartHandoff(b *testing.B) {
	ping, pong := make(chan struct{}, 1), make(chan struct{}, 1)
	go func() {
		for range ping {
			pong <- struct{}{}
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		ping <- struct{}{}
		<-pong
	}
	close(ping)
}

// BenchmarkPartReadEmpty is one look at an empty socket: a read that
// finds nothing, through the raw socket as the provider reads.
func BenchmarkPartReadEmpty(b *testing.B) {
	nc, peer := tcpPair(b)
	defer nc.Close()
	defer peer.Close()
	var s sockReader
	s.nc, s.raw = nc, rawConn(nc)
	s.rawRead = s.readRaw
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err, ok := s.try(buf); ok {
			b.Fatal("the socket is not empty", err)
		}
	}
}

// BenchmarkPartYield is one yield of the CPU to other threads, as a poll
// yields between looks.
func BenchmarkPartYield(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		yield()
	}
}
