package loopback

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

const benchRegion = 8 << 20

// benchPair opens a job of two goroutine-PEs and returns PE 0's endpoint
// and region; PE 1 runs peer (if any) and then waits in Close for PE 0.
func benchPair(b *testing.B, opts core.EndpointOptions, peer func(d *domain, ep core.Endpoint, r core.Region)) (*domain, core.Endpoint, core.Region) {
	b.Helper()
	boots := bootstrap.NewLocal(2)
	shm, job := b.TempDir(), randomID()
	cfg := func(rank int) *core.Config {
		return &core.Config{Bootstrap: boots[rank], JobID: job, Env: func(k string) (string, bool) {
			if k == core.EnvShmDir {
				return shm, true
			}
			return os.LookupEnv(k) // GOSHMEM_LOOPBACK_SPIN, to compare settings

		}}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		d, err := provider{}.Open(cfg(1))
		if err != nil {
			b.Error(err)
			return
		}
		r, err := d.NewRegion(benchRegion)
		if err != nil {
			b.Error(err)
			return
		}
		ep, err := d.NewEndpoint(opts)
		if err != nil {
			b.Error(err)
			return
		}
		if peer != nil {
			peer(d.(*domain), ep, r)
		}
		if err := d.Close(); err != nil {
			b.Error(err)
		}
	})
	d, err := provider{}.Open(cfg(0))
	require.NoError(b, err)
	r, err := d.NewRegion(benchRegion)
	require.NoError(b, err)
	ep, err := d.NewEndpoint(opts)
	require.NoError(b, err)
	b.Cleanup(func() {
		require.NoError(b, d.Close())
		wg.Wait()
	})
	return d.(*domain), ep, r
}

func BenchmarkPut8(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	src := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Put(1, r, 64, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutValue8(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.PutValue(1, r, 64, 42, 8); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut8Serialized is BenchmarkPut8 on an endpoint of one
// goroutine, like shmem's default context: where the job fences
// asymmetrically its puts carry no fence.
func BenchmarkPut8Serialized(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{Serialized: true}, nil)
	src := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Put(1, r, 64, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutValue8Serialized(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{Serialized: true}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.PutValue(1, r, 64, 42, 8); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut8Quiet(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	src := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Put(1, r, 64, src); err != nil {
			b.Fatal(err)
		}
		if err := ep.Quiet(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut8PeerWaiting is BenchmarkPut8Quiet while PE 1 waits, as it
// does in a barrier, for a word the puts do not touch: every put must
// check PE 1's watches, and wake it only for writes to the watched word.
func BenchmarkPut8PeerWaiting(b *testing.B) {
	done := make(chan struct{})
	_, ep, r := benchPair(b, core.EndpointOptions{}, func(d *domain, _ core.Endpoint, r core.Region) {
		seq, watch := d.WaitArm(r, 0, 8)
		for {
			select {
			case <-done:
				d.WaitDisarm(watch)
				return
			default:
				seq = d.WaitChange(seq, time.Millisecond)
			}
		}
	})
	src := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Put(1, r, 64<<10, src); err != nil {
			b.Fatal(err)
		}
		if err := ep.Quiet(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(done)
}

func BenchmarkGet8(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	dst := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Get(1, r, 64, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFetchAdd(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ep.FetchAtomic(1, r, 64, core.AtomicAdd, core.Uint64, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFetchAddSerialized is BenchmarkFetchAdd on an endpoint one
// goroutine uses at a time, which counts atomics without an atomic add.
func BenchmarkFetchAddSerialized(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{Serialized: true}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ep.FetchAtomic(1, r, 64, core.AtomicAdd, core.Uint64, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAtomicAdd(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Atomic(1, r, 64, core.AtomicAdd, core.Uint64, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompareSwap(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	b.ReportAllocs()
	var v uint64
	for b.Loop() {
		old, err := ep.FetchAtomic(1, r, 64, core.AtomicCSwap, core.Uint64, v+1, v)
		if err != nil || old != v {
			b.Fatal(err, old, v)
		}
		v++
	}
}

func BenchmarkPut4MiB(b *testing.B) {
	_, ep, r := benchPair(b, core.EndpointOptions{}, nil)
	src := make([]byte, 4<<20)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if err := ep.Put(1, r, 0, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPingPong is a round trip through LocalWaiter: PE 0 puts i to
// PE 1, which waits for it and puts it back. It measures how fast a put
// wakes a waiting PE.
func BenchmarkPingPong(b *testing.B) {
	const off = 64
	n := uint64(b.N)
	waitGE := func(d *domain, r core.Region, v uint64) {
		// As shmem waits: poll the word as the job's core.Waiting says
		// (the barrier's spin, d.spin, by default), then arm and sleep.
		w := mem.Word64(r.Local(), off)
		for range d.spin {
			if atomic.LoadUint64(w) >= v {
				return
			}
		}
		seq, watch := d.WaitArm(r, off, 8)
		for atomic.LoadUint64(w) < v {
			seq = d.WaitChange(seq, time.Millisecond)
		}
		d.WaitDisarm(watch)
	}
	d, ep, r := benchPair(b, core.EndpointOptions{}, func(d *domain, ep core.Endpoint, r core.Region) {
		for i := uint64(1); i <= n; i++ {
			waitGE(d, r, i)
			if err := ep.PutValue(0, r, off, i, 8); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := uint64(1); i <= n; i++ {
		if err := ep.PutValue(1, r, off, i, 8); err != nil {
			b.Fatal(err)
		}
		waitGE(d, r, i)
	}
}

// BenchmarkPingPongPoll is BenchmarkPingPong with both PEs polling the word
// and never arming: the floor that LocalWaiter's bookkeeping adds to.
func BenchmarkPingPongPoll(b *testing.B) {
	const off = 64
	n := uint64(b.N)
	waitGE := func(r core.Region, v uint64) {
		for w := mem.Word64(r.Local(), off); atomic.LoadUint64(w) < v; {
		}
	}
	_, ep, r := benchPair(b, core.EndpointOptions{}, func(d *domain, ep core.Endpoint, r core.Region) {
		for i := uint64(1); i <= n; i++ {
			waitGE(r, i)
			if err := ep.PutValue(0, r, off, i, 8); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := uint64(1); i <= n; i++ {
		if err := ep.PutValue(1, r, off, i, 8); err != nil {
			b.Fatal(err)
		}
		waitGE(r, i)
	}
}
