package ntbring

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/goshmem/goshmem/core"
)

// The seed papers' experiments as benchmarks. They run the emulated link
// under its Gen3 x8 timing model unless GOSHMEM_NTB_MODEL says otherwise;
// GOSHMEM_NTB_* and GOSHMEM_NTBRING_* variables of the environment pass
// through, so settings can be compared run against run.

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

var benchSizes = []int{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dM", n>>20)
	}
	return fmt.Sprintf("%dK", n>>10)
}

func newEP(b *testing.B, d *domain) core.Endpoint {
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return ep
}

// BenchmarkPutThroughput is experiment (a): host 0 streams puts of one
// size to its neighbour and waits for the acks at the end, with one
// worker (as the seeds measured it) and with two. Compare with "ntbtool
// perf" on the same model for the device's raw DMA rate.
func BenchmarkPutThroughput(b *testing.B) {
	for _, workers := range []int{1, 2} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("workers=%d/%s", workers, sizeName(size)), func(b *testing.B) {
				benchPutStream(b, workers, size)
			})
		}
	}
}

func benchPutStream(b *testing.B, workers, size int) {
	doms := openRingT(b, 2, benchEnv(map[string]string{paramWorkers.Env: fmt.Sprint(workers)}))
	rs := regions(b, doms, 8<<20)
	ep := newEP(b, doms[0])
	src := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	off := 0
	for b.Loop() {
		if err := ep.Put(1, rs[0], off, src); err != nil {
			b.Fatal(err)
		}
		if off += size; off+size > 8<<20 {
			off = 0
		}
	}
	if err := ep.Quiet(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRingNeighbourPut is experiment (b): every host puts to its
// right neighbour at once and waits for the ack (the seeds' turn-around
// latency), by worker count and host count. ns/op is one round of every
// host's put and ack.
func BenchmarkRingNeighbourPut(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		for _, hosts := range []int{3, 4, 5} {
			for _, workers := range []int{1, 2, 4, 8} {
				b.Run(fmt.Sprintf("size=%s/hosts=%d/workers=%d", sizeName(size), hosts, workers), func(b *testing.B) {
					doms := openRingT(b, hosts, benchEnv(map[string]string{paramWorkers.Env: fmt.Sprint(workers)}))
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
				})
			}
		}
	}
}

// BenchmarkHops is experiment (c): put latency (with its ack, and until
// Put returns) and get latency from host 0 to hosts one and two hops away
// on a ring of five.
func BenchmarkHops(b *testing.B) {
	doms := openRingT(b, 5, benchEnv(nil))
	rs := regions(b, doms, 2<<20)
	ep := newEP(b, doms[0])
	for _, size := range []int{8, 1 << 10, 64 << 10} {
		buf := make([]byte, size)
		for _, hops := range []int{1, 2} {
			b.Run(fmt.Sprintf("put/size=%d/hops=%d", size, hops), func(b *testing.B) {
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
			// The seeds' put latency: until Put returns, the ack not awaited.
			b.Run(fmt.Sprintf("put-return/size=%d/hops=%d", size, hops), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := ep.Put(hops, rs[0], 0, buf); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if err := ep.Quiet(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
			b.Run(fmt.Sprintf("get/size=%d/hops=%d", size, hops), func(b *testing.B) {
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

// BenchmarkBarrier is experiment (d): the ring barrier by host count.
func BenchmarkBarrier(b *testing.B) {
	for _, hosts := range []int{2, 3, 4, 5} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			doms := openRingT(b, hosts, benchEnv(nil))
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
