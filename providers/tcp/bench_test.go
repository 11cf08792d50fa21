package tcp_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/tcp"
)

// The benchmarks run two PEs over TCP on 127.0.0.1 and time PE 0. Each
// runs twice: with PE 1 a goroutine of this process (tcp.BenchPair), and,
// named BenchmarkProc..., with PE 1 a separate process (procPair).

// pair opens two PEs with a region of size bytes each and returns PE 0's
// endpoint and region.
type pair func(b *testing.B, size int) (core.Endpoint, core.Region)

// BenchmarkPut8Quiet is the latency of an 8-byte put made complete.
func BenchmarkPut8Quiet(b *testing.B)     { benchPut8Quiet(b, tcp.BenchPair) }
func BenchmarkProcPut8Quiet(b *testing.B) { benchPut8Quiet(b, procPair) }

// BenchmarkGet8 is the latency of an 8-byte get.
func BenchmarkGet8(b *testing.B)     { benchGet8(b, tcp.BenchPair) }
func BenchmarkProcGet8(b *testing.B) { benchGet8(b, procPair) }

// BenchmarkGet is the latency of a get at the sizes around InjectSize
// (16 KiB), where a reply stops being copied into the target's queue and
// is written from its memory instead.
func BenchmarkGet(b *testing.B)     { benchGetSizes(b, tcp.BenchPair) }
func BenchmarkProcGet(b *testing.B) { benchGetSizes(b, procPair) }

// getSizes are BenchmarkGet's sizes.
var getSizes = []int{4 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20}

func benchGetSizes(b *testing.B, open pair) {
	ep, r := open(b, getSizes[len(getSizes)-1])
	for _, n := range getSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			dst := make([]byte, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if err := ep.Get(1, r, 0, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sizeName is n bytes as a benchmark's name: 4K, 1M.
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}

// BenchmarkFetchAdd is the latency of a 64-bit fetch-and-add.
func BenchmarkFetchAdd(b *testing.B)     { benchFetchAdd(b, tcp.BenchPair) }
func BenchmarkProcFetchAdd(b *testing.B) { benchFetchAdd(b, procPair) }

// BenchmarkPut8Rate is the issue rate of 8-byte puts, completed by one
// quiet at the end: ns/op is the inverse of the rate. It is also the
// sender's fast path, whose allocations per operation it reports.
func BenchmarkPut8Rate(b *testing.B)     { benchPut8Rate(b, tcp.BenchPair) }
func BenchmarkProcPut8Rate(b *testing.B) { benchPut8Rate(b, procPair) }

// BenchmarkPut1MiB and BenchmarkPut4MiB are put bandwidth, written from
// the caller's buffer.
func BenchmarkPut1MiB(b *testing.B)     { benchBandwidth(b, tcp.BenchPair, 1<<20) }
func BenchmarkPut4MiB(b *testing.B)     { benchBandwidth(b, tcp.BenchPair, 4<<20) }
func BenchmarkProcPut1MiB(b *testing.B) { benchBandwidth(b, procPair, 1<<20) }
func BenchmarkProcPut4MiB(b *testing.B) { benchBandwidth(b, procPair, 4<<20) }

// BenchmarkPutValue8Rate is BenchmarkPut8Rate through PutValue.
func BenchmarkPutValue8Rate(b *testing.B) {
	ep, r := tcp.BenchPair(b, 1<<20)
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

func benchPut8Quiet(b *testing.B, open pair) {
	ep, r := open(b, 4096)
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

func benchGet8(b *testing.B, open pair) {
	ep, r := open(b, 4096)
	dst := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Get(1, r, 0, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFetchAdd(b *testing.B, open pair) {
	ep, r := open(b, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ep.FetchAtomic(1, r, 0, core.AtomicAdd, core.Uint64, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutSignal8Rate issues 8-byte puts, each with its signal: as
// one operation (the endpoint's PutSignal, one write for both where the
// put would go alone) and apart (Put, Fence, Atomic: the signal, within
// burstGap of the put, the writer goroutine's).
func BenchmarkPutSignal8Rate(b *testing.B) {
	for _, c := range []struct {
		name string
		put  func(core.Endpoint, int, core.Region, int, []byte, core.Region, int, core.AtomicOp, uint64) error
	}{{"joined", core.Endpoint.PutSignal}, {"apart", core.PutFenceSignal}} {
		b.Run(c.name, func(b *testing.B) {
			ep, r := tcp.BenchPair(b, 1<<20)
			src := make([]byte, 8)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := c.put(ep, 1, r, 64+(i%4096)*8, src, r, 0, core.AtomicAdd, 1); err != nil {
					b.Fatal(err)
				}
				i++
			}
			require.NoError(b, ep.Quiet())
		})
	}
}

func benchPut8Rate(b *testing.B, open pair) {
	ep, r := open(b, 1<<20)
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

func benchBandwidth(b *testing.B, open pair, size int) {
	ep, r := open(b, size)
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

// BenchmarkPut8Window is a window of 64 non-blocking 8-byte puts and its
// quiet, as shmemperf's put_bw; Locked is the same from a goroutine locked
// to its thread with core.Config.LockedCallers set, as a C program's calls
// are, whose quiet waits for its acknowledgements in poll(2).
func BenchmarkPut8Window(b *testing.B)       { benchPut8Window(b, tcp.BenchPair, false) }
func BenchmarkLockedPut8Window(b *testing.B) { benchPut8Window(b, tcp.LockedBenchPair, true) }
func BenchmarkProcPut8Window(b *testing.B)   { benchPut8Window(b, procPair, false) }
func BenchmarkProcLockedPut8Window(b *testing.B) {
	benchPut8Window(b, lockedProcPair, true)
}

func benchPut8Window(b *testing.B, open pair, locked bool) {
	if locked {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	ep, r := open(b, 4096)
	src := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		for i := range 64 {
			if err := ep.PutNBI(1, r, i*8, src); err != nil {
				b.Fatal(err)
			}
		}
		if err := ep.Quiet(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut4MiBQuiet is a 4 MiB put made complete, as shmemperf's
// put_lat at 4 MiB; Locked is the same from a goroutine locked to its
// thread with core.Config.LockedCallers set, as a C program's calls are.
func BenchmarkPut4MiBQuiet(b *testing.B)       { benchPut4MiBQuiet(b, tcp.BenchPair, false) }
func BenchmarkLockedPut4MiBQuiet(b *testing.B) { benchPut4MiBQuiet(b, tcp.LockedBenchPair, true) }
func BenchmarkProcPut4MiBQuiet(b *testing.B)   { benchPut4MiBQuiet(b, procPair, false) }
func BenchmarkProcLockedPut4MiBQuiet(b *testing.B) {
	benchPut4MiBQuiet(b, lockedProcPair, true)
}

func benchPut4MiBQuiet(b *testing.B, open pair, locked bool) {
	if locked {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	const size = 4 << 20
	ep, r := open(b, size)
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	b.SetBytes(size)
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

// BenchmarkProcPut8Batch is a stream of 8-byte puts (PutValue) to a PE
// process, 256 between quiets, outside a batch and in one (core.Batcher:
// a session with SHMEM_CTX_SESSION_BATCH), back to back (work=0) and
// with 3µs of computation before each (work=3µs, a busy loop: puts more
// than burstGap apart, which outside a batch their issuers write one by
// one). writes/op is the writes of PE 0's connection per put.
func BenchmarkProcPut8Batch(b *testing.B) {
	for _, work := range []time.Duration{0, 3 * time.Microsecond} {
		for _, batch := range []bool{false, true} {
			b.Run(fmt.Sprintf("work=%v/batch=%v", work, batch), func(b *testing.B) {
				benchPut8Batch(b, work, batch)
			})
		}
	}
}

func benchPut8Batch(b *testing.B, work time.Duration, batch bool) {
	ep, r := procPair(b, 1<<16)
	bt := ep.(core.Batcher)
	w0 := tcp.Writes(ep, 1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if batch && i%256 == 0 {
			bt.StartBatch(256)
		}
		if work > 0 {
			for start := time.Now(); time.Since(start) < work; {
			}
		}
		if err := ep.PutValue(1, r, (i%4096)*8, uint64(i), 8); err != nil {
			b.Fatal(err)
		}
		i++
		if i%256 == 0 {
			if batch {
				require.NoError(b, bt.StopBatch())
			}
			require.NoError(b, ep.Quiet())
		}
	}
	if batch {
		require.NoError(b, bt.StopBatch())
	}
	require.NoError(b, ep.Quiet())
	b.ReportMetric(float64(tcp.Writes(ep, 1)-w0)/float64(i), "writes/op")
}
