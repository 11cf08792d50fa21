package hybrid_test

import (
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// The point-to-point figures of the composite on PEs posing as hosts
// (docs/measuring.md, "Several hosts on one machine"): an 8-byte put (then quiet), get and
// fetch-add from PE 0 to a PE of its host and to one of another host, in
// a job of 2 hosts x 2 PEs with the intra-host part on and off, beside
// jobs of loopback alone (one host) and tcp alone (2 hosts x 1 PE).
func BenchmarkPair(b *testing.B) {
	twoByTwo := []string{"a", "a", "b", "b"}
	for _, c := range []struct {
		name   string
		spec   string
		hosts  []string
		env    map[string]string
		target int
	}{
		{"hybrid/same-host", "tcp", twoByTwo, nil, 1},
		{"hybrid/other-host", "tcp", twoByTwo, nil, 2},
		{"tcp-only/same-host", "tcp", twoByTwo, map[string]string{core.EnvHybrid: "0"}, 1},
		{"tcp-only/other-host", "tcp", twoByTwo, map[string]string{core.EnvHybrid: "0"}, 2},
		{"loopback-alone", "loopback", []string{"a", "a"}, nil, 1},
		{"tcp-alone", "tcp", []string{"a", "b"}, nil, 1},
	} {
		conformance.BenchPair(b, c.name, c.spec, c.hosts, c.env, c.target)
	}
}

// BenchmarkSameHost sets the same-host figures of docs/results.md,
// "tcp+loopback: several PEs per host"
// side by side in one loop: an 8-byte put (then quiet), get and fetch-add
// from PE 0 to PE 1 of its host, in a tcp+loopback job of 2 hosts x 2 PEs
// and in a job of loopback alone (1 host x 2 PEs), both open at once,
// alternating batches of 1000 operations. Load from elsewhere slows a
// batch of either kind alike, so the medians of the batches and their
// ratio hold still on a busy machine, where two separate runs of
// BenchmarkPair do not. ns/op counts one operation of each job.
func BenchmarkSameHost(b *testing.B) {
	// Each runs n operations, a batch, so that the loop around an
	// operation is the one BenchmarkPair has.
	for _, op := range []struct {
		name string
		do   func(w *shmem.World, word *int64, n int) error
	}{
		{"put", func(w *shmem.World, word *int64, n int) error {
			for i := range n {
				if err := shmem.P(w, word, int64(i), 1); err != nil {
					return err
				}
				if err := w.Quiet(); err != nil {
					return err
				}
			}
			return nil
		}},
		{"get", func(w *shmem.World, word *int64, n int) error {
			for range n {
				if _, err := shmem.G(w, word, 1); err != nil {
					return err
				}
			}
			return nil
		}},
		{"fadd", func(w *shmem.World, word *int64, n int) error {
			for range n {
				if _, err := shmem.AtomicFetchAdd(w, word, 1, 1); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		b.Run(op.name, func(b *testing.B) {
			hw, hword, hdone := conformance.BenchJob(b, "tcp", []string{"a", "a", "b", "b"}, nil)
			defer hdone()
			lw, lword, ldone := conformance.BenchJob(b, "loopback", []string{"a", "a"}, nil)
			defer ldone()
			const batch = 1000
			nb := (b.N + batch - 1) / batch
			hyb, loop := make([]time.Duration, 0, nb), make([]time.Duration, 0, nb)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				n := min(batch, b.N-i)
				t0 := time.Now()
				if err := op.do(hw, hword, n); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := op.do(lw, lword, n); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if n == batch {
					hyb, loop = append(hyb, t1.Sub(t0)), append(loop, t2.Sub(t1))
				}
			}
			b.StopTimer()
			if len(hyb) == 0 {
				return
			}
			h, l := median(hyb)/batch, median(loop)/batch
			b.ReportMetric(h, "tcp+loopback-ns/op")
			b.ReportMetric(l, "loopback-ns/op")
			b.ReportMetric(h/l, "ratio")
		})
	}
}

// median is the median of d in nanoseconds; it sorts d.
func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Nanoseconds())
}

// collJob starts a job of len(hosts) PEs in process, PE i posing as
// running on hosts[i], and runs body on every PE b.N times; the figure is
// the time per call on PE 0, which starts and stops the clock after
// barriers that every PE enters.
func collJob(b *testing.B, spec string, hosts []string, env map[string]string, body func(w *shmem.World, src, dst []int64) error) {
	b.Helper()
	// Every "host" shares this machine's CPUs with the others: the PEs
	// outnumber them, and waiters should know it.
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	env[core.EnvCPUs] = "1"
	worlds, finalize := conformance.BenchWorlds(b, spec, hosts, env)
	defer finalize()
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	n := b.N
	b.ReportAllocs()
	for pe, w := range worlds {
		wg.Go(func() {
			buf, err := shmem.Malloc[int64](w, 2)
			if err == nil {
				err = w.BarrierAll()
			}
			if pe == 0 {
				b.ResetTimer()
			}
			for i := 0; i < n && err == nil; i++ {
				buf[0] = int64(i)
				err = body(w, buf[:1], buf[1:])
			}
			if pe == 0 {
				b.StopTimer()
			}
			if err == nil {
				err = w.BarrierAll()
			}
			errs[pe] = err
		})
	}
	wg.Wait()
	for pe, err := range errs {
		if err != nil {
			b.Fatalf("PE %d: %v", pe, err)
		}
	}
}

// The collective figures measured on posed hosts (docs/measuring.md,
// "Several hosts on one machine"): a barrier and an 8-byte
// sum-reduce over every PE of 2 hosts x 2 PEs and 3 hosts x 2 PEs, with
// the intra-host part on and off.
func BenchmarkColl(b *testing.B) {
	off := map[string]string{core.EnvHybrid: "0"}
	for _, c := range []struct {
		name  string
		hosts []string
		env   map[string]string
	}{
		{"2x2/hybrid", []string{"a", "a", "b", "b"}, nil},
		{"2x2/tcp-only", []string{"a", "a", "b", "b"}, off},
		{"3x2/hybrid", []string{"a", "a", "b", "b", "c", "c"}, nil},
		{"3x2/tcp-only", []string{"a", "a", "b", "b", "c", "c"}, off},
	} {
		b.Run(c.name+"/barrier", func(b *testing.B) {
			collJob(b, "tcp", c.hosts, c.env, func(w *shmem.World, _, _ []int64) error { return w.BarrierAll() })
		})
		b.Run(c.name+"/sum8", func(b *testing.B) {
			collJob(b, "tcp", c.hosts, c.env, func(w *shmem.World, src, dst []int64) error {
				return shmem.SumReduce(w.TeamWorld(), dst, src)
			})
		})
	}
}
