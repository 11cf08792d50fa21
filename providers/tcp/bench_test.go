package tcp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The benchmarks run two PEs as goroutines of this process over TCP on
// 127.0.0.1: PE 0 issues, PE 1's progress goroutine serves.

func benchPair(b *testing.B, size int) (*endpoint, *region) {
	doms, _ := openJob(b, 2, nil)
	regs := newRegions(b, doms, size)
	return newEndpoint(b, doms[0]), regs[0]
}

// BenchmarkPut8Quiet is the latency of an 8-byte put made complete.
func BenchmarkPut8Quiet(b *testing.B) {
	ep, r := benchPair(b, 4096)
	src := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Put(1, r, 0, src); err != nil {
			b.Fatal(err)
		}
		if err := ep.Quiet(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet8 is the latency of an 8-byte get.
func BenchmarkGet8(b *testing.B) {
	ep, r := benchPair(b, 4096)
	dst := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Get(1, r, 0, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFetchAdd is the latency of a 64-bit fetch-and-add.
func BenchmarkFetchAdd(b *testing.B) {
	ep, r := benchPair(b, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ep.FetchAtomic(1, r, 0, opAdd, u64, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut8Rate is the issue rate of 8-byte puts, completed by one
// quiet at the end: ns/op is the inverse of the rate. It is also the
// sender's fast path, whose allocations per operation it reports.
func BenchmarkPut8Rate(b *testing.B) {
	ep, r := benchPair(b, 1<<20)
	src := make([]byte, 8)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := ep.Put(1, r, (i%4096)*8, src); err != nil {
			b.Fatal(err)
		}
		i++
	}
	require.NoError(b, ep.Quiet())
}

// BenchmarkPutValue8Rate is BenchmarkPut8Rate through PutValue.
func BenchmarkPutValue8Rate(b *testing.B) {
	ep, r := benchPair(b, 1<<20)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := ep.PutValue(1, r, (i%4096)*8, uint64(i), 8); err != nil {
			b.Fatal(err)
		}
		i++
	}
	require.NoError(b, ep.Quiet())
}

func benchBandwidth(b *testing.B, size int) {
	ep, r := benchPair(b, size)
	src := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Put(1, r, 0, src); err != nil {
			b.Fatal(err)
		}
	}
	require.NoError(b, ep.Quiet())
}

// BenchmarkPut1MiB and BenchmarkPut4MiB are put bandwidth, written from
// the caller's buffer.
func BenchmarkPut1MiB(b *testing.B) { benchBandwidth(b, 1<<20) }
func BenchmarkPut4MiB(b *testing.B) { benchBandwidth(b, 4<<20) }
