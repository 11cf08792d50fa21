package ntbring

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/ntb/emu"
)

// The seed papers' experiments, and the relay's, as benchmarks that run
// both protocols side by side in one run, so that their ratios hold on a
// loaded machine (docs/ntbring.md, "Both protocols measured side by
// side"):
//
//	go test -run '^$' -bench . -benchtime 2s ./providers/ntbring
//
// They run the emulated link under its Gen3 x8 timing model unless
// GOSHMEM_NTB_MODEL says otherwise; GOSHMEM_NTB_* and GOSHMEM_NTBRING_*
// variables of the environment pass through.

// benchProtocols are the protocols every benchmark compares.
var benchProtocols = []string{protoRing, protoSeed}

// benchEnv is the environment of a benchmark ring: the process's own
// GOSHMEM_NTB* variables, the Gen3 x8 model by default, and extra.
func benchEnv(extra map[string]string) map[string]string {
	env := map[string]string{"GOSHMEM_NTB_MODEL": "gen3x8"}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "GOSHMEM_NTB") {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

func newEP(b *testing.B, d *domain) core.Endpoint {
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return ep
}

// throughputSizes are the sizes of the throughput benchmarks.
var throughputSizes = []int{64 << 10, 256 << 10, 1 << 20, 4 << 20}

// BenchmarkPutThroughput is experiment (a): host 0 streams puts of one
// size to its neighbour and completes them at the end, on each protocol,
// beside the raw device: DMA descriptors of the same size kept in flight
// on one channel, as ntb_perf (and "ntbtool perf") measures it.
func BenchmarkPutThroughput(b *testing.B) {
	for _, size := range throughputSizes {
		b.Run(fmt.Sprintf("size=%s/raw", sizeName(size)), func(b *testing.B) { benchRawDMA(b, size) })
		for _, proto := range benchProtocols {
			b.Run(fmt.Sprintf("size=%s/proto=%s", sizeName(size), proto), func(b *testing.B) {
				benchPutStream(b, proto, 2, 1, size)
			})
		}
	}
}

// BenchmarkPutHopsThroughput is the relay experiment: the stream of
// BenchmarkPutThroughput to a host one and two hops away on a ring of
// five; the 2-hop stream is relayed by the host between.
func BenchmarkPutHopsThroughput(b *testing.B) {
	for _, proto := range benchProtocols {
		for _, hops := range []int{1, 2} {
			b.Run(fmt.Sprintf("size=1M/proto=%s/hops=%d", proto, hops), func(b *testing.B) {
				benchPutStream(b, proto, 5, hops, 1<<20)
			})
		}
	}
}

func benchRawDMA(b *testing.B, size int) {
	l := newRawLink(b, size)
	src := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	// Up to rawDepth descriptors in flight, as ntbtool perf keeps them;
	// the timer stops after the last one completed.
	const rawDepth = 8
	for n := b.N; n > 0; n -= rawDepth {
		if err := l.stream(src, min(n, rawDepth)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPutStream streams puts of size from host 0 to host hops on a ring
// of hosts and quiets at the end; setup, if any, runs on the ring first.
func benchPutStream(b *testing.B, proto string, hosts, hops, size int, setup ...func([]*domain)) {
	doms := openRingT(b, hosts, benchEnv(map[string]string{paramProtocol.Env: proto}))
	const regionSize = 16 << 20
	rs := regions(b, doms, regionSize)
	for _, f := range setup {
		f(doms)
	}
	ep := newEP(b, doms[0])
	src := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	off := 0
	for b.Loop() {
		if err := ep.Put(hops, rs[0], off, src); err != nil {
			b.Fatal(err)
		}
		if off += size; off+size > regionSize {
			off = 0
		}
	}
	if err := ep.Quiet(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRingNeighbourPut is experiment (b): every host puts to its
// right neighbour at once and quiets (the seeds' turn-around latency), by
// worker count and host count. ns/op is one round of every host's put.
func BenchmarkRingNeighbourPut(b *testing.B) {
	for _, proto := range benchProtocols {
		for _, size := range []int{4 << 10, 1 << 20} {
			for _, hosts := range []int{3, 4, 5} {
				for _, workers := range []int{1, 2, 4, 8} {
					name := fmt.Sprintf("proto=%s/size=%s/hosts=%d/workers=%d", proto, sizeName(size), hosts, workers)
					b.Run(name, func(b *testing.B) { benchNeighbourPut(b, proto, size, hosts, workers) })
				}
			}
		}
	}
}

func benchNeighbourPut(b *testing.B, proto string, size, hosts, workers int) {
	doms := openRingT(b, hosts, benchEnv(map[string]string{paramProtocol.Env: proto, paramWorkers.Env: fmt.Sprint(workers)}))
	rs := regions(b, doms, 2<<20)
	eps := make([]core.Endpoint, hosts)
	for i, d := range doms {
		eps[i] = newEP(b, d)
	}
	src := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	n := b.N
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range doms {
		wg.Go(func() {
			for range n {
				if err := eps[i].Put((i+1)%hosts, rs[i], 0, src); err != nil {
					b.Error(err)
					return
				}
				if err := eps[i].Quiet(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkHops is experiment (c): put latency (until complete, and until
// Put returns) and get latency from host 0 to hosts one and two hops away
// on a ring of five.
func BenchmarkHops(b *testing.B) {
	for _, proto := range benchProtocols {
		b.Run("proto="+proto, func(b *testing.B) { benchHops(b, proto) })
	}
}

func benchHops(b *testing.B, proto string) {
	doms := openRingT(b, 5, benchEnv(map[string]string{paramProtocol.Env: proto}))
	rs := regions(b, doms, 2<<20)
	ep := newEP(b, doms[0])
	for _, size := range []int{8, 1 << 10, 64 << 10} {
		buf := make([]byte, size)
		for _, hops := range []int{1, 2} {
			b.Run(fmt.Sprintf("put/size=%s/hops=%d", sizeName(size), hops), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := ep.Put(hops, rs[0], 0, buf); err != nil {
						b.Fatal(err)
					}
					if err := ep.Quiet(); err != nil {
						b.Fatal(err)
					}
				}
			})
			// The seeds' put latency: until Put returns, completion not
			// awaited. It is timed around Put alone (StopTimer would add
			// the cost of reading the memory statistics) and reported as
			// put-ns; ns/op includes the Quiet.
			b.Run(fmt.Sprintf("put-return/size=%s/hops=%d", sizeName(size), hops), func(b *testing.B) {
				var in time.Duration
				for b.Loop() {
					start := time.Now()
					if err := ep.Put(hops, rs[0], 0, buf); err != nil {
						b.Fatal(err)
					}
					in += time.Since(start)
					if err := ep.Quiet(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(in.Nanoseconds())/float64(b.N), "put-ns")
			})
			b.Run(fmt.Sprintf("get/size=%s/hops=%d", sizeName(size), hops), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := ep.Get(hops, rs[0], 0, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBarrier is experiment (d): the provider's barrier by host
// count: the seeds' ring barrier on doorbells (seed, and ring with
// BARRIER=ring) against the dissemination barrier over the rings.
func BenchmarkBarrier(b *testing.B) {
	for _, c := range []struct{ proto, barrier string }{
		{protoSeed, barrierRing}, {protoRing, barrierRing}, {protoRing, barrierDissemination},
	} {
		for _, hosts := range []int{2, 3, 4, 5} {
			b.Run(fmt.Sprintf("proto=%s/barrier=%s/hosts=%d", c.proto, c.barrier, hosts), func(b *testing.B) {
				doms := openRingT(b, hosts, benchEnv(map[string]string{paramProtocol.Env: c.proto, paramBarrier.Env: c.barrier}))
				b.ReportAllocs()
				n := b.N
				b.ResetTimer()
				var wg sync.WaitGroup
				for _, d := range doms {
					wg.Go(func() {
						for range n {
							if err := d.Barrier(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// BenchmarkRatios measures the two headline ratios with their operands
// interleaved, so that a machine whose load changes by the second still
// compares like with like: batches of 1 MiB puts to the neighbour
// alternate with batches of raw DMA descriptors (put/raw), and batches to
// the host one hop away with batches to the host two hops away on a ring
// of five (2hop/1hop). It reports MB/s of each and their ratio, for
// blocking puts and for non-blocking ones (/nbi), which the ring protocol
// keeps in flight until the batch's quiet.
func BenchmarkRatios(b *testing.B) {
	const size, batch = 1 << 20, 8
	for _, proto := range benchProtocols {
		for _, nbi := range []bool{false, true} {
			put, name := "put", ""
			if nbi {
				put, name = "put-nbi", "/nbi"
			}
			b.Run("put-vs-raw"+name+"/proto="+proto, func(b *testing.B) {
				raw := newRawLink(b, size)
				doms := openRingT(b, 2, benchEnv(map[string]string{paramProtocol.Env: proto}))
				rs := regions(b, doms, size)
				ep := newEP(b, doms[0])
				src := make([]byte, size)
				var tRaw, tPut time.Duration
				for b.Loop() {
					tRaw += timed(b, func() error { return raw.stream(src, batch) })
					tPut += timed(b, func() error { return putBatch(ep, 1, rs[0], src, batch, nbi) })
				}
				reportRatio(b, size*batch, put, tPut, "raw", tRaw)
			})
			b.Run("2hop-vs-1hop"+name+"/proto="+proto, func(b *testing.B) {
				doms := openRingT(b, 5, benchEnv(map[string]string{paramProtocol.Env: proto}))
				rs := regions(b, doms, size)
				ep := newEP(b, doms[0])
				src := make([]byte, size)
				var t1, t2 time.Duration
				for b.Loop() {
					t1 += timed(b, func() error { return putBatch(ep, 1, rs[0], src, batch, nbi) })
					t2 += timed(b, func() error { return putBatch(ep, 2, rs[0], src, batch, nbi) })
				}
				reportRatio(b, size*batch, "2hop", t2, "1hop", t1)
			})
		}
	}
}

func timed(b *testing.B, f func() error) time.Duration {
	start := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// putBatch puts src n times to pe, blocking or not, and completes the
// puts.
func putBatch(ep core.Endpoint, pe int, r core.Region, src []byte, n int, nbi bool) error {
	put := ep.Put
	if nbi {
		put = ep.PutNBI
	}
	for range n {
		if err := put(pe, r, 0, src); err != nil {
			return err
		}
	}
	return ep.Quiet()
}

// reportRatio reports the rates of two operands that each moved bytes per
// iteration, and the first's rate over the second's.
func reportRatio(b *testing.B, bytes int, a string, ta time.Duration, c string, tc time.Duration) {
	mb := float64(bytes) * float64(b.N) / 1e6
	b.ReportMetric(mb/ta.Seconds(), a+"-MB/s")
	b.ReportMetric(mb/tc.Seconds(), c+"-MB/s")
	b.ReportMetric(tc.Seconds()/ta.Seconds(), a+"/"+c)
}

// rawLink is one emulated link used without any protocol.
type rawLink struct {
	win []byte
	ch  ntb.DMAChannel
}

func newRawLink(b *testing.B, size int) *rawLink {
	opts, err := emu.OptionsFromEnv(testEnv("", benchEnv(nil)), 2)
	if err != nil {
		b.Fatal(err)
	}
	r, err := emu.NewRing(b.TempDir(), 2, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	if err := r.EnableAll(time.Minute); err != nil {
		b.Fatal(err)
	}
	if _, err := r.Hosts[1].Left.MWSetTrans(0, int64(size)); err != nil {
		b.Fatal(err)
	}
	win, err := r.Hosts[0].Right.PeerMW(0)
	if err != nil {
		b.Fatal(err)
	}
	ch, err := r.Hosts[0].Right.DMA(0)
	if err != nil {
		b.Fatal(err)
	}
	return &rawLink{win: win, ch: ch}
}

// stream keeps n descriptors of src in flight and waits for them.
func (l *rawLink) stream(src []byte, n int) error {
	for range n {
		if err := l.ch.Submit(l.win, src, nil); err != nil {
			return err
		}
	}
	return l.ch.Wait()
}

// BenchmarkSmallOps is the small operations of a PE to its neighbour's
// heap, one at a time, on each protocol: an 8-byte PutValue and an 8-byte
// Put, each followed by a quiet, a GetValue, a non-fetching atomic
// followed by a quiet, and a fetching atomic. The puts go straight into
// the neighbour's heap where the protocol can, and should allocate
// nothing there.
func BenchmarkSmallOps(b *testing.B) {
	for _, proto := range benchProtocols {
		doms := openRingT(b, 2, benchEnv(map[string]string{paramProtocol.Env: proto}))
		rs := regions(b, doms, 4096)
		ep := newEP(b, doms[0])
		src := make([]byte, 8)
		ops := []struct {
			name string
			f    func(i int) error
		}{
			{"putvalue", func(i int) error {
				if err := ep.PutValue(1, rs[0], 64, uint64(i), 8); err != nil {
					return err
				}
				return ep.Quiet()
			}},
			{"put8", func(i int) error {
				src[0] = byte(i)
				if err := ep.Put(1, rs[0], 128, src); err != nil {
					return err
				}
				return ep.Quiet()
			}},
			{"getvalue", func(int) error {
				_, err := ep.GetValue(1, rs[0], 64, 8)
				return err
			}},
			{"atomic", func(int) error {
				if err := ep.Atomic(1, rs[0], 256, core.AtomicAdd, core.Uint64, 1); err != nil {
					return err
				}
				return ep.Quiet()
			}},
			{"fetchatomic", func(int) error {
				_, err := ep.FetchAtomic(1, rs[0], 256, core.AtomicAdd, core.Uint64, 1, 0)
				return err
			}},
		}
		for _, op := range ops {
			b.Run(fmt.Sprintf("proto=%s/%s", proto, op.name), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := op.f(i); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}
