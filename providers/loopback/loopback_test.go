package loopback

import (
	"errors"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

func TestInfo(t *testing.T) {
	p, err := core.Lookup(Name)
	require.NoError(t, err)
	info := p.Info()
	require.Equal(t, Name, info.Name)
	require.Equal(t, core.CapRMA|core.CapAtomic|core.CapFetchAtomic|core.CapCompareSwap|core.CapAtomicFloat|
		core.CapDirectAccess|core.CapLocalAtomics|core.CapPEQuiet|core.CapBlocks, info.Caps)
	require.Equal(t, core.FullAtomics(), info.Atomics)
	require.Equal(t, core.OneHost, info.Locality)
	require.Equal(t, core.ProgressAuto, info.Progress)
	require.Equal(t, core.OrderPutPut|core.OrderAtomicAtomic, info.Order)
	require.True(t, info.ThreadSafe)
	require.Equal(t, core.Unbounded, info.MaxMsgSize)
	require.Equal(t, core.Unbounded, info.InjectSize)
	require.Equal(t, 100, info.Preference)
	require.Equal(t, "built-in", info.Origin)
	require.NotEmpty(t, info.Description)
	spin, ok := info.Param("SPIN")
	require.True(t, ok)
	require.Equal(t, "GOSHMEM_LOOPBACK_SPIN", spin.Env)
}

func TestPutGetRoundTrip(t *testing.T) {
	t.Parallel()
	sizes := []struct {
		n, off int
	}{{0, 0}, {1, 3}, {7, 1}, {8, 5}, {4096, 3}, {1<<20 + 3, 7}}
	type rma struct {
		name string
		put  func(ep core.Endpoint, pe int, r core.Region, off int, b []byte) error
		get  func(ep core.Endpoint, pe int, r core.Region, off int, b []byte) error
	}
	kinds := []rma{
		{"blocking", core.Endpoint.Put, core.Endpoint.Get},
		{"nbi", core.Endpoint.PutNBI, core.Endpoint.GetNBI},
	}
	for _, k := range kinds {
		for _, sz := range sizes {
			t.Run(k.name+"/"+formatInt(sz.n), func(t *testing.T) {
				t.Parallel()
				const n = 3
				regionSize := sz.off + sz.n + 16
				newJob(t, n).run(func(p *peT) {
					r, ep := p.region(regionSize, core.EndpointOptions{})
					right, left := (p.rank+1)%n, (p.rank+n-1)%n
					require.NoError(p, k.put(ep, right, r, sz.off, pattern(p.rank, sz.n)))
					require.NoError(p, ep.Quiet())
					p.barrier()

					local := r.Local()
					require.Len(p, local, regionSize)
					require.Equal(p, make([]byte, sz.off), local[:sz.off], "bytes before the put")
					require.Equal(p, pattern(left, sz.n), local[sz.off:sz.off+sz.n])
					require.Equal(p, make([]byte, 16), local[sz.off+sz.n:], "bytes after the put")

					got := make([]byte, sz.n)
					require.NoError(p, k.get(ep, right, r, sz.off, got))
					require.NoError(p, ep.Quiet())
					require.Equal(p, pattern(p.rank, sz.n), got, "get of what this PE put")
					require.NoError(p, ep.Close())
				})
			})
		}
	}
}

func formatInt(n int) string { return core.FormatSize(int64(n)) }

func TestPutGetValue(t *testing.T) {
	t.Parallel()
	newJob(t, 2).run(func(p *peT) {
		r, ep := p.region(64, core.EndpointOptions{})
		other := 1 - p.rank
		vals := map[int]uint64{1: 0xab, 2: 0xbeef, 4: 0xdeadbeef, 8: 0x0123456789abcdef}
		offs := map[int]int{1: 1, 2: 2, 4: 4, 8: 8}
		for size, v := range vals {
			// High bits beyond size are not written.
			require.NoError(p, ep.PutValue(other, r, offs[size]+16*p.rank, v|0xff<<56, size))
		}
		p.barrier()
		for size, v := range vals {
			got, err := ep.GetValue(p.rank, r, offs[size]+16*other, size)
			require.NoError(p, err)
			if size < 8 {
				v &= 1<<(8*size) - 1
			} else {
				v |= 0xff << 56
			}
			require.Equal(p, v, got, "value of %d bytes", size)
		}
		// A value is stored in host order, as a typed store would be.
		require.Equal(p, uint32(0xdeadbeef), *mem.Word32(r.Local(), 4+16*other))
	})
}

// refAtomic computes what an atomic leaves in memory, for the test.
func refAtomic(op core.AtomicOp, typ core.AtomicType, old, operand, compare uint64) uint64 {
	mask := uint64(math.MaxUint64)
	if typ.Size() == 4 {
		mask = math.MaxUint32
	}
	operand, compare = operand&mask, compare&mask
	switch op {
	case core.AtomicRead:
		return old
	case core.AtomicWrite, core.AtomicSwap:
		return operand
	case core.AtomicAdd:
		return (old + operand) & mask
	case core.AtomicAnd:
		return old & operand
	case core.AtomicOr:
		return old | operand
	case core.AtomicXor:
		return old ^ operand
	case core.AtomicCSwap:
		if old == compare {
			return operand
		}
		return old
	}
	panic("refAtomic: " + op.String())
}

func TestAtomicsEveryOpAndType(t *testing.T) {
	t.Parallel()
	type input struct{ old, operand, compare uint64 }
	inputs := map[core.AtomicType][]input{
		core.Int32: {
			{i32(-5), i32(3), i32(-5)},
			{0x7fffffff, 1, 1},
		},
		core.Uint32:  {{0xf0f0f0f0, 0xff00ff00 | 0xdead<<32, 0xf0f0f0f0}, {math.MaxUint32, 2, 0}},
		core.Int64:   {{uint64(1 << 62), uint64(1 << 62), uint64(1 << 62)}, {math.MaxUint64, 1, 7}},
		core.Uint64:  {{0x0123456789abcdef, 0xfedcba9876543210, 0x0123456789abcdef}, {0, math.MaxUint64, 1}},
		core.Float32: {{uint64(math.Float32bits(1.5)), uint64(math.Float32bits(-2.25)), uint64(math.Float32bits(1.5))}},
		core.Float64: {{math.Float64bits(math.Pi), math.Float64bits(-0.5), math.Float64bits(1)}},
	}
	newJob(t, 2).run(func(p *peT) {
		r, ep := p.region(64, core.EndpointOptions{})
		if p.rank == 0 {
			for typ, ins := range inputs {
				// 32-bit words at an offset that is 4- but not 8-aligned.
				off := 24
				if typ.Size() == 4 {
					off = 28
				}
				for op := core.AtomicRead; op <= core.AtomicCSwap; op++ {
					if !fullAtomics.Supports(op, typ) {
						_, err := ep.FetchAtomic(1, r, off, op, typ, 1, 0)
						require.ErrorIs(p, err, core.ErrNotSupported, "%v on %v", op, typ)
						continue
					}
					for _, in := range ins {
						require.NoError(p, ep.PutValue(1, r, off, in.old, typ.Size()))
						old, err := ep.FetchAtomic(1, r, off, op, typ, in.operand, in.compare)
						require.NoError(p, err)
						require.Equal(p, in.old, old, "fetch-%v on %v returned", op, typ)
						got, err := ep.GetValue(1, r, off, typ.Size())
						require.NoError(p, err)
						want := refAtomic(op, typ, in.old, in.operand, in.compare)
						require.Equal(p, want, got, "fetch-%v on %v left", op, typ)

						require.NoError(p, ep.PutValue(1, r, off, in.old, typ.Size()))
						err = ep.Atomic(1, r, off, op, typ, in.operand)
						if op == core.AtomicCSwap {
							require.ErrorIs(p, err, core.ErrInvalid, "non-fetching cswap")
							want = in.old
						} else {
							require.NoError(p, err)
							want = refAtomic(op, typ, in.old, in.operand, 0)
						}
						got, err = ep.GetValue(1, r, off, typ.Size())
						require.NoError(p, err)
						require.Equal(p, want, got, "%v on %v left", op, typ)
					}
				}
			}
		}
		p.barrier()
		// Nothing outside the target words was touched.
		if p.rank == 1 {
			require.Equal(p, make([]byte, 24), r.Local()[:24])
			require.Equal(p, make([]byte, 64-32), r.Local()[32:])
		}
	})
}

func TestFetchAddIsExact(t *testing.T) {
	t.Parallel()
	const n, m = 4, 2000
	var mu sync.Mutex
	seen := map[uint64]int{}
	newJob(t, n).run(func(p *peT) {
		r, ep := p.region(64, core.EndpointOptions{})
		olds := make([]uint64, 0, m)
		for range m {
			old, err := ep.FetchAtomic(0, r, 8, core.AtomicAdd, core.Uint64, 1, 0)
			require.NoError(p, err)
			olds = append(olds, old)
			require.NoError(p, ep.Atomic(n-1, r, 4, core.AtomicAdd, core.Int32, i32(-1)))
		}
		require.NoError(p, ep.Quiet())
		p.barrier()
		switch p.rank {
		case 0:
			require.Equal(p, uint64(n*m), atomic.LoadUint64(mem.Word64(r.Local(), 8)))
		case n - 1:
			require.Equal(p, int32(-n*m), int32(atomic.LoadUint32(mem.Word32(r.Local(), 4))))
		}
		mu.Lock()
		defer mu.Unlock()
		for _, o := range olds {
			seen[o]++
		}
	})
	// Every old value was handed out exactly once.
	require.Len(t, seen, n*m)
	for v, c := range seen {
		require.Less(t, v, uint64(n*m))
		require.Equal(t, 1, c)
	}
}

func TestCompareSwapElectsOne(t *testing.T) {
	t.Parallel()
	const n = 4
	for round := range 20 {
		var winners atomic.Int32
		newJob(t, n).run(func(p *peT) {
			r, ep := p.region(64, core.EndpointOptions{})
			target := round % n
			old, err := ep.FetchAtomic(target, r, 0, core.AtomicCSwap, core.Int64, uint64(p.rank+1), 0)
			require.NoError(p, err)
			if old == 0 {
				winners.Add(1)
			} else {
				require.LessOrEqual(p, old, uint64(n))
			}
			p.barrier()
			leader, err := ep.FetchAtomic(target, r, 0, core.AtomicRead, core.Int64, 0, 0)
			require.NoError(p, err)
			require.NotZero(p, leader)
			if old == 0 {
				require.Equal(p, uint64(p.rank+1), leader, "the winner sees its own value")
			}
		})
		require.Equal(t, int32(1), winners.Load(), "round %d", round)
	}
}

// TestSharedEndpoint uses one endpoint from several goroutines of a PE, as
// ThreadSafe allows, and checks the counts.
func TestSharedEndpoint(t *testing.T) {
	t.Parallel()
	const n, threads, m = 2, 4, 500
	newJob(t, n).run(func(p *peT) {
		r, ep := p.region(4096, core.EndpointOptions{})
		var wg sync.WaitGroup
		for th := range threads {
			wg.Go(func() {
				buf := pattern(th, 8)
				for range m {
					if ep.Put(1-p.rank, r, 64+8*th, buf) != nil {
						p.t.Error("put failed")
						return
					}
					if _, err := ep.FetchAtomic(0, r, 0, core.AtomicAdd, core.Uint64, 1, 0); err != nil {
						p.t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		require.NoError(p, ep.Quiet())
		c := ep.Counter()
		require.Equal(p, uint64(2*threads*m), c.Issued())
		require.Equal(p, c.Issued(), c.Completed())
		require.Zero(p, c.Errors())
		p.barrier()
		if p.rank == 0 {
			require.Equal(p, uint64(n*threads*m), atomic.LoadUint64(mem.Word64(r.Local(), 0)))
		}
	})
}

func TestCounter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts core.EndpointOptions
	}{
		{"shared", core.EndpointOptions{}},
		{"serialized", core.EndpointOptions{Serialized: true}},
		{"private", core.EndpointOptions{Private: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			newJob(t, 2).run(func(p *peT) {
				r, ep := p.region(64, tt.opts)
				c := ep.Counter()
				require.Zero(p, c.Issued())
				buf := make([]byte, 8)
				require.NoError(p, ep.Put(0, r, 0, buf))
				require.NoError(p, ep.Put(0, r, 0, nil)) // a no-op is not counted
				require.NoError(p, ep.Get(1, r, 0, buf))
				require.NoError(p, ep.PutValue(1, r, 8, 1, 8))
				_, err := ep.GetValue(1, r, 8, 8)
				require.NoError(p, err)
				require.NoError(p, ep.Atomic(1, r, 8, core.AtomicAdd, core.Uint64, 1))
				_, err = ep.FetchAtomic(1, r, 8, core.AtomicAdd, core.Uint64, 1, 0)
				require.NoError(p, err)
				require.Error(p, ep.Put(5, r, 0, buf)) // a refused call is not counted
				require.NoError(p, ep.Quiet())
				require.Same(p, c, ep.Counter())
				require.Equal(p, uint64(6), c.Issued(), "Counter brings the counter up to date")
				require.Equal(p, c.Issued(), c.Completed(), "nothing is ever pending")
				require.NoError(p, c.Quiet(time.Second, nil))
				require.NoError(p, ep.Put(0, r, 0, buf))
				require.NoError(p, ep.Close())
				require.Equal(p, uint64(7), c.Issued(), "Close brings it up to date")
				require.Equal(p, c.Issued(), c.Completed())
			})
		})
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	const n, size = 2, 4096
	newJob(t, n).run(func(p *peT) {
		r, ep := p.region(size, core.EndpointOptions{})
		// A region of another domain of the same job.
		d2, err := provider{}.Open(p.job.cfg(p.rank))
		require.NoError(p, err)
		foreign, err := d2.NewRegion(size)
		require.NoError(p, err)

		buf := make([]byte, 16)
		var (
			peErr    *core.PEError
			bounds   *core.BoundsError
			align    *core.AlignError
			amoErr   *core.AtomicOpError
			valueErr *core.ValueSizeError
		)
		fetch := func(pe, off int, op core.AtomicOp, typ core.AtomicType) error {
			_, err := ep.FetchAtomic(pe, r, off, op, typ, 1, 0)
			return err
		}
		getValue := func(pe, off, size int) error {
			_, err := ep.GetValue(pe, r, off, size)
			return err
		}
		tests := []struct {
			name string
			err  error
			is   error
			as   any
		}{
			{"put PE n", ep.Put(n, r, 0, buf), core.ErrInvalid, &peErr},
			{"get PE -1", ep.Get(-1, r, 0, buf), core.ErrInvalid, &peErr},
			{"zero-length put PE n", ep.Put(n, r, 0, nil), core.ErrInvalid, &peErr},
			{"zero-length get PE -1", ep.Get(-1, r, 0, nil), core.ErrInvalid, &peErr},
			{"put-nbi PE n", ep.PutNBI(n, r, 0, buf), core.ErrInvalid, &peErr},
			{"get-nbi PE n", ep.GetNBI(n, r, 0, buf), core.ErrInvalid, &peErr},
			{"atomic PE n", ep.Atomic(n, r, 0, core.AtomicAdd, core.Int64, 1), core.ErrInvalid, &peErr},
			{"fetch PE n", fetch(n, 0, core.AtomicAdd, core.Int64), core.ErrInvalid, &peErr},
			{"put-value PE n", ep.PutValue(n, r, 0, 1, 8), core.ErrInvalid, &peErr},
			{"put past end", ep.Put(1, r, size-15, buf), core.ErrOutOfBounds, &bounds},
			{"get past end", ep.Get(1, r, size, buf), core.ErrOutOfBounds, &bounds},
			{"put at -1", ep.Put(1, r, -1, buf), core.ErrOutOfBounds, &bounds},
			{"put far", ep.PutNBI(1, r, 1<<40, buf), core.ErrOutOfBounds, &bounds},
			{"get-nbi past end", ep.GetNBI(1, r, size-1, buf), core.ErrOutOfBounds, &bounds},
			{"zero-length put past end", ep.Put(1, r, size+1, nil), core.ErrOutOfBounds, &bounds},
			{"atomic past end", ep.Atomic(1, r, size, core.AtomicAdd, core.Uint32, 1), core.ErrOutOfBounds, &bounds},
			{"put-value past end", ep.PutValue(1, r, size-4, 1, 8), core.ErrOutOfBounds, &bounds},
			{"get-value past end", getValue(1, size-1, 2), core.ErrOutOfBounds, &bounds},
			{"misaligned 64", ep.Atomic(1, r, 4, core.AtomicAdd, core.Uint64, 1), core.ErrInvalid, &align},
			{"misaligned 32", fetch(1, 2, core.AtomicSwap, core.Float32), core.ErrInvalid, &align},
			{"undefined op", ep.Atomic(1, r, 0, core.AtomicOp(99), core.Uint64, 1), core.ErrInvalid, &amoErr},
			{"op 0", fetch(1, 0, core.AtomicOp(0), core.Uint64), core.ErrInvalid, &amoErr},
			{"undefined type", fetch(1, 0, core.AtomicAdd, core.AtomicType(0)), core.ErrInvalid, &amoErr},
			{"float add", ep.Atomic(1, r, 0, core.AtomicAdd, core.Float64, 1), core.ErrNotSupported, &amoErr},
			{"float xor", fetch(1, 0, core.AtomicXor, core.Float32), core.ErrNotSupported, &amoErr},
			{"non-fetching cswap", ep.Atomic(1, r, 0, core.AtomicCSwap, core.Int64, 1), core.ErrInvalid, &amoErr},
			{"value of 3 bytes", getValue(1, 0, 3), core.ErrInvalid, &valueErr},
			{"value of 0 bytes", ep.PutValue(1, r, 0, 0, 0), core.ErrInvalid, &valueErr},
			{"foreign region", ep.Put(1, foreign, 0, buf), core.ErrInvalid, nil},
			{"nil region", ep.Get(1, nil, 0, buf), core.ErrInvalid, nil},
		}
		for _, tt := range tests {
			require.ErrorIs(p, tt.err, tt.is, tt.name)
			if tt.as != nil {
				require.ErrorAs(p, tt.err, tt.as, tt.name)
			}
			var op *core.OpError
			require.ErrorAs(p, tt.err, &op, tt.name)
			require.Equal(p, Name, op.Provider, tt.name)
			require.Contains(p, tt.err.Error(), "loopback: ", tt.name)
		}
		require.Zero(p, ep.Counter().Issued(), "refused calls count nothing")
		require.NoError(p, d2.Close())
		p.barrier()
		require.Equal(p, make([]byte, size), r.Local(), "bad input must not write")
	})
}

func TestNewRegionSizeMismatch(t *testing.T) {
	t.Parallel()
	const n = 3
	newJob(t, n).run(func(p *peT) {
		size := 4096
		if p.rank == 1 {
			size = 8192
		}
		_, err := p.dom.NewRegion(size)
		require.ErrorIs(p, err, core.ErrInvalid)
		require.ErrorContains(p, err, "different sizes (4096 on PEs 0, 2; 8192 on PE 1)")

		_, err = p.dom.NewRegion(-1)
		require.ErrorIs(p, err, core.ErrInvalid, "a negative size everywhere")

		// The domain is still consistent: the next region works.
		r, ep := p.region(4096, core.EndpointOptions{})
		require.NoError(p, ep.Put((p.rank+1)%n, r, 0, []byte{byte(p.rank + 1)}))
		p.barrier()
		require.Equal(p, byte((p.rank+n-1)%n+1), r.Local()[0])
		require.Empty(p, dirEntries(p, p.job.dir()))
	})
}

// TestShareFailsOnEveryPE: a failure on one PE while mapping the others'
// files is an error on every PE, and every file is gone afterwards.
func TestShareFailsOnEveryPE(t *testing.T) {
	t.Parallel()
	const n = 3
	newJob(t, n).run(func(p *peT) {
		maps, err := p.dom.share("test file", "t", 4096, nil, func(pe int, m []byte) error {
			if p.rank == 1 && pe == 2 {
				return errors.New("injected")
			}
			return nil
		})
		require.Nil(p, maps)
		want := "PE 1: map test file of PE 2: injected"
		if p.rank == 1 {
			want = "map test file of PE 2: injected"
		}
		require.ErrorContains(p, err, want)
		require.Empty(p, dirEntries(p, p.job.dir()))
		// The PEs are still in step.
		r, ep := p.region(64, core.EndpointOptions{})
		require.NoError(p, ep.PutValue((p.rank+1)%n, r, 0, 7, 8))
	})
}

func TestZeroSizeRegion(t *testing.T) {
	t.Parallel()
	newJob(t, 2).run(func(p *peT) {
		r, ep := p.region(0, core.EndpointOptions{})
		require.Empty(p, r.Local())
		require.NoError(p, ep.Put(1-p.rank, r, 0, nil))
		require.NoError(p, ep.Get(1-p.rank, r, 0, nil))
		require.ErrorIs(p, ep.Put(1-p.rank, r, 0, []byte{1}), core.ErrOutOfBounds)
		require.ErrorIs(p, ep.Atomic(1-p.rank, r, 0, core.AtomicAdd, core.Int32, 1), core.ErrOutOfBounds)
	})
}

// TestFilesUnlinked: once Open and NewRegion return, every PE's files are
// gone from the job directory, though the memory stays shared.
func TestFilesUnlinked(t *testing.T) {
	t.Parallel()
	for _, wake := range []string{WakeFutex, WakePoller} {
		t.Run(wake, func(t *testing.T) {
			t.Parallel()
			testFilesUnlinked(t, wake)
		})
	}
}

func testFilesUnlinked(t *testing.T, wake string) {
	const n = 4
	j := newJob(t, n)
	j.env[paramWake.Env] = wake
	j.run(func(p *peT) {
		require.Empty(p, dirEntries(p, p.job.dir()), "after Open")
		st, err := os.Stat(p.job.dir())
		require.NoError(p, err)
		require.Equal(p, os.FileMode(0o700), st.Mode().Perm())
		for i := range 3 {
			r, ep := p.region(1<<16+i, core.EndpointOptions{})
			require.Empty(p, dirEntries(p, p.job.dir()), "after NewRegion %d", i)
			require.NoError(p, ep.PutValue((p.rank+1)%n, r, 8*i, uint64(p.rank), 8))
			p.barrier()
			v, err := ep.GetValue(p.rank, r, 8*i, 8)
			require.NoError(p, err)
			require.Equal(p, uint64((p.rank+n-1)%n), v)
		}
	})
	require.NoDirExists(t, j.dir(), "the last PE to close removes the job directory")
}

func TestOpenFailsOnEveryPE(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(t *testing.T, j *testJob)
		config func(rank int, cfg *core.Config)
		is     error
		want   string
	}{
		{
			name: "bad spin on one PE",
			config: func(rank int, cfg *core.Config) {
				if rank == 2 {
					env := cfg.Env
					cfg.Env = func(k string) (string, bool) {
						if k == "GOSHMEM_LOOPBACK_SPIN" {
							return "lots", true
						}
						return env(k)
					}
				}
			},
			want: `GOSHMEM_LOOPBACK_SPIN="lots" is malformed`,
		},
		{
			name: "another host",
			config: func(rank int, cfg *core.Config) {
				cfg.HostID = "host-a"
				if rank == 1 {
					cfg.HostID = "host-b"
				}
			},
			is:   core.ErrNotSupported,
			want: `PE 0 is on "host-a" and PE 1 on "host-b"`,
		},
		{
			name: "job dir is a file",
			setup: func(t *testing.T, j *testJob) {
				require.NoError(t, os.WriteFile(j.dir(), nil, 0o600))
			},
			want: "not a directory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, 3)
			j.config = tt.config
			if tt.setup != nil {
				tt.setup(t, j)
			}
			j.runRaw(func(p *peT) {
				d, err := provider{}.Open(j.cfg(p.rank))
				require.Nil(p, d)
				require.ErrorContains(p, err, tt.want)
				if tt.is != nil {
					require.ErrorIs(p, err, tt.is)
				}
			})
		})
	}
}

func TestDirectAccessIsAtomicWithEndpoint(t *testing.T) {
	t.Parallel()
	const n, m = 2, 5000
	newJob(t, n).run(func(p *peT) {
		r, ep := p.region(64, core.EndpointOptions{})
		peer := p.dom.PeerBytes(1, r)
		require.Len(p, peer, 64)
		require.Nil(p, p.dom.PeerBytes(n, r))
		require.Nil(p, p.dom.PeerBytes(0, nil))
		// PE 1's word, added to by PE 1 itself with sync/atomic through its
		// own mapping and by PE 0 through its endpoint and PeerBytes.
		w := mem.Word64(peer, 8)
		for i := range m {
			if p.rank == 0 && i%2 == 0 {
				atomic.AddUint64(w, 1)
			} else {
				require.NoError(p, ep.Atomic(1, r, 8, core.AtomicAdd, core.Uint64, 1))
			}
		}
		p.barrier()
		require.Equal(p, uint64(n*m), atomic.LoadUint64(w))
		if p.rank == 1 {
			require.Equal(p, mem.Addr(r.Local()), mem.Addr(peer), "PeerBytes of self is Local")
		}
	})
}

func TestCloseIsIdempotentAndLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	newJob(t, 2).runRaw(func(p *peT) {
		d, err := provider{}.Open(p.job.cfg(p.rank))
		require.NoError(p, err)
		r, err := d.NewRegion(64)
		require.NoError(p, err)
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		require.NoError(p, err)
		ep2, err := d.NewEndpoint(core.EndpointOptions{Serialized: true})
		require.NoError(p, err)
		require.NoError(p, ep2.Close())
		require.NoError(p, ep2.Close())
		require.ErrorIs(p, ep2.Quiet(), core.ErrClosed)

		require.NoError(p, d.Close())
		require.NoError(p, d.Close())

		buf := make([]byte, 8)
		var op *core.OpError
		require.ErrorAs(p, ep.Put(1-p.rank, r, 0, buf), &op)
		require.ErrorIs(p, op, core.ErrClosed)
		require.Equal(p, 1-p.rank, op.PE)
		require.ErrorIs(p, ep.Get(0, r, 0, buf), core.ErrClosed)
		require.ErrorIs(p, ep.PutValue(0, r, 0, 1, 8), core.ErrClosed)
		require.ErrorIs(p, ep.Atomic(0, r, 0, core.AtomicAdd, core.Int64, 1), core.ErrClosed)
		_, err = ep.FetchAtomic(0, r, 0, core.AtomicAdd, core.Int64, 1, 0)
		require.ErrorIs(p, err, core.ErrClosed)
		require.ErrorIs(p, ep.Fence(), core.ErrClosed)
		require.ErrorIs(p, ep.Quiet(), core.ErrClosed)
		require.NoError(p, ep.Close())
		_, err = d.NewRegion(64)
		require.ErrorIs(p, err, core.ErrClosed)
		_, err = d.NewEndpoint(core.EndpointOptions{})
		require.ErrorIs(p, err, core.ErrClosed)
		require.Nil(p, r.Local())
		require.Nil(p, d.(core.DirectAccess).PeerBytes(0, r))
		w := d.(core.LocalWaiter)
		seq, watch := w.WaitArm(nil, 0, 0)
		require.Equal(p, seq, w.WaitChange(seq, time.Hour), "no wait on a closed domain")
		w.WaitDisarm(watch)
	})
}

// TestCloseAfterLostPeer: a PE whose peer died still unmaps and returns.
func TestCloseAfterLostPeer(t *testing.T) {
	t.Parallel()
	j := newJob(t, 2)
	j.runRaw(func(p *peT) {
		d, err := provider{}.Open(j.cfg(p.rank))
		require.NoError(p, err)
		_, err = d.NewRegion(4096)
		require.NoError(p, err)
		p.barrier()
		if p.rank == 1 {
			p.boot.Kill()
			p.releaseAtEnd(d)
			return
		}
		err = d.Close()
		require.ErrorIs(p, err, core.ErrPeerLost)
		require.NoError(p, d.Close())
	})
}

// TestWaiterWokenByRemoteWrite: a PE asleep in WaitChange is woken by
// another PE's put or atomic, not by the timeout.
func TestWaiterWokenByRemoteWrite(t *testing.T) {
	t.Parallel()
	writes := []struct {
		name  string
		write func(ep core.Endpoint, r core.Region) error
	}{
		{"put", func(ep core.Endpoint, r core.Region) error { return ep.Put(1, r, 8, []byte{1}) }},
		{"put-value", func(ep core.Endpoint, r core.Region) error { return ep.PutValue(1, r, 8, 1, 1) }},
		{"put-nbi", func(ep core.Endpoint, r core.Region) error { return ep.PutNBI(1, r, 8, []byte{1}) }},
		{"atomic", func(ep core.Endpoint, r core.Region) error {
			return ep.Atomic(1, r, 8, core.AtomicOr, core.Uint32, 1)
		}},
		{"fetch-atomic", func(ep core.Endpoint, r core.Region) error {
			_, err := ep.FetchAtomic(1, r, 8, core.AtomicSwap, core.Uint64, 1, 0)
			return err
		}},
	}
	for _, how := range []string{"spinning", "sleeping", "polling"} {
		sleep := how != "spinning"
		for _, wr := range writes {
			name := wr.name + "/" + how
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				j := newJob(t, 2)
				if sleep {
					j.env["GOSHMEM_LOOPBACK_SPIN"] = "0"
				}
				if how == "polling" {
					j.env[paramWake.Env] = WakePoller
				}
				j.run(func(p *peT) {
					r, ep := p.region(64, core.EndpointOptions{})
					flag := &r.Local()[8]
					w := core.LocalWaiter(p.dom)
					switch p.rank {
					case 1:
						armed, watch := w.WaitArm(r, 8, 8)
						p.barrier()
						for seq := armed; atomic.LoadUint32(mem.Word32(r.Local(), 8)) == 0; {
							seq = w.WaitChange(seq, time.Minute)
						}
						require.Equal(p, byte(1), *flag)
						p.barrier()
						// PE 0 wrote after the first barrier, so it saw this
						// PE armed: by the time it reached the last one, its
						// write had bumped seq, whether or not this PE got
						// as far as waiting (the store itself can be seen
						// before the bump, so the watch stays armed until
						// then).
						require.NotEqual(p, armed, atomic.LoadUint32(p.dom.self.seq))
						w.WaitDisarm(watch)
						return
					case 0:
						p.barrier()
						switch how {
						case "sleeping":
							// Write only once PE 1 sleeps in the kernel, to
							// prove the futex wake-up crosses mappings.
							waitFor(func() bool { return atomic.LoadUint32(p.dom.ctl[1].sleepers) == 1 })
						case "polling":
							// Or in its poller, on its pipe.
							waitFor(func() bool { return atomic.LoadUint32(p.dom.ctl[1].pollers) == 1 })
						}
						require.NoError(p, wr.write(ep, r))
					}
					p.barrier()
				})
			})
		}
	}
}

// TestWatchesArePrecise: a waiter is woken by writes to the bytes it
// watches and not by writes elsewhere in its memory; a waiter without a
// range, or beyond the free slots, is woken by any write.
func TestWatchesArePrecise(t *testing.T) {
	t.Parallel()
	j := newJob(t, 2)
	j.run(func(p *peT) {
		r, ep := p.region(1<<12, core.EndpointOptions{})
		w := core.LocalWaiter(p.dom)
		seq := func() uint32 { return atomic.LoadUint32(p.dom.self.seq) }
		// PE 0 writes, PE 1 watches; each step is bracketed by barriers so
		// PE 1 reads seq before and after PE 0's write.
		step := func(arm func() int, write func() error, woken bool, what string) {
			var before uint32
			var watch int
			if p.rank == 1 {
				watch = arm()
				before = seq()
			}
			p.barrier()
			if p.rank == 0 {
				require.NoError(p, write())
			}
			p.barrier()
			if p.rank == 1 {
				if woken {
					require.NotEqual(p, before, seq(), "%s: the waiter was not woken", what)
				} else {
					require.Equal(p, before, seq(), "%s: the waiter was woken", what)
				}
				w.WaitDisarm(watch)
			}
			p.barrier()
		}
		watch := func(off, n int) func() int {
			return func() int { _, s := w.WaitArm(r, off, n); return s }
		}
		put := func(off, n int) func() error { return func() error { return ep.Put(1, r, off, make([]byte, n)) } }
		add := func(off int) func() error {
			return func() error { return ep.Atomic(1, r, off, core.AtomicAdd, core.Uint64, 1) }
		}
		step(watch(64, 8), put(0, 64), false, "put just below the watch")
		step(watch(64, 8), put(72, 100), false, "put just above the watch")
		step(watch(64, 8), put(71, 1), true, "put into the watch's last byte")
		step(watch(64, 8), put(0, 4096), true, "put across the watch")
		step(watch(64, 8), add(128), false, "atomic elsewhere")
		step(watch(64, 8), add(64), true, "atomic on the watch")
		step(func() int { _, s := w.WaitArm(nil, 0, 0); return s }, put(4000, 8), true, "any-change waiter")
		// More waiters than slots: the overflow waits for any change.
		var extra []int
		if p.rank == 1 {
			for range watchSlots {
				_, s := w.WaitArm(r, 0, 8)
				require.GreaterOrEqual(p, s, 0)
				extra = append(extra, s)
			}
		}
		step(watch(64, 8), put(2048, 8), true, "overflowed watch table")
		if p.rank == 1 {
			for _, s := range extra {
				w.WaitDisarm(s)
			}
			require.Zero(p, atomic.LoadUint32(p.dom.self.waiters))
			require.Zero(p, atomic.LoadUint32(p.dom.self.anyWaiters))
			for i, v := range p.dom.self.watches {
				require.Zero(p, v, "watch word %d left set", i)
			}
		}
	})
}

// waitFor polls cond, yielding; for test set-up only.
func waitFor(cond func() bool) {
	var b core.Backoff
	for !cond() {
		b.Pause()
	}
}

func TestWaitChangeTimesOut(t *testing.T) {
	t.Parallel()
	for _, fence := range []string{"auto", "atomic"} {
		t.Run(fence, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, 1)
			j.env["GOSHMEM_LOOPBACK_SPIN"] = "10"
			j.env["GOSHMEM_LOOPBACK_FENCE"] = fence
			j.run(func(p *peT) {
				w := core.LocalWaiter(p.dom)
				seq, watch := w.WaitArm(nil, 0, 0)
				start := time.Now()
				got := w.WaitChange(seq, 2*time.Millisecond)
				if p.dom.asym {
					require.Equal(p, seq|settled, got, "the barrier returns before the sleep")
					require.Equal(p, seq, w.WaitChange(got, 0), "max 0 does not sleep")
					got = w.WaitChange(got, 2*time.Millisecond)
				}
				require.Equal(p, seq|settled, got, "a sleep without a change keeps the waiter settled")
				require.GreaterOrEqual(p, time.Since(start), 2*time.Millisecond)
				start = time.Now()
				require.Equal(p, got, w.WaitChange(got, 2*time.Millisecond), "a settled waiter sleeps at once, and stays settled")
				require.GreaterOrEqual(p, time.Since(start), 2*time.Millisecond)
				require.Equal(p, seq, w.WaitChange(seq, 0), "max 0 does not sleep")
				w.WaitDisarm(watch)
				require.Zero(p, atomic.LoadUint32(p.dom.self.waiters))
				require.Zero(p, atomic.LoadUint32(p.dom.self.sleepers))
			})
		})
	}
}

func TestSameHostRejectsMalformed(t *testing.T) {
	err := sameHost([][]byte{{1}})
	require.ErrorIs(t, err, core.ErrInvalid)
}

// i32 is v in the uint64 form atomics travel in.
func i32(v int32) uint64 { return uint64(uint32(v)) }

func TestSpinParam(t *testing.T) {
	tests := []struct {
		value string
		npes  int
		want  int
		err   bool
	}{
		{"", 1, core.SoloPolls, false},
		{"auto", runtime.NumCPU(), core.SoloPolls, false},
		{" auto ", runtime.NumCPU() + 1, core.SharedPolls, false},
		{"0", 1, 0, false},
		{"123", 1000, 123, false},
		{strconv.Itoa(maxSpin), 1, maxSpin, false},
		{"-1", 1, 0, true},
		{"lots", 1, 0, true},
		{strconv.Itoa(maxSpin + 1), 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			cfg := &core.Config{Env: func(k string) (string, bool) {
				return tt.value, k == "GOSHMEM_LOOPBACK_SPIN"
			}}
			got, err := spinPolls(cfg, core.NewWaiting(tt.npes, runtime.NumCPU()))
			if tt.err {
				var envErr *core.EnvError
				require.ErrorAs(t, err, &envErr)
				require.ErrorIs(t, err, core.ErrInvalid)
				require.Contains(t, err.Error(), `"auto" or an integer`)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRegionTooLarge: a region the shared-memory file system cannot hold
// fails on every PE, as ErrNoMemory where it failed, and leaves no file.
func TestRegionTooLarge(t *testing.T) {
	t.Parallel()
	const size = 1 << 40
	var st syscall.Statfs_t
	// Only a tmpfs with a size limit smaller than the request refuses it
	// at once; elsewhere the test would really allocate a terabyte.
	if syscall.Statfs("/dev/shm", &st) != nil || st.Type != tmpfsMagic || st.Blocks == 0 ||
		uint64(st.Blocks)*uint64(st.Bsize) >= size {
		t.Skip("no /dev/shm tmpfs smaller than 1 TiB")
	}
	j := newJob(t, 2)
	j.shm = "/dev/shm"
	t.Cleanup(func() { _ = os.RemoveAll(j.dir()) })
	j.run(func(p *peT) {
		_, err := p.dom.NewRegion(size)
		require.ErrorContains(p, err, "no space left on device")
		require.ErrorContains(p, err, "GOSHMEM_SHM_DIR chooses another")
		require.ErrorIs(p, err, core.ErrNoMemory)
		require.Empty(p, dirEntries(p, p.job.dir()))
		r, ep := p.region(4096, core.EndpointOptions{})
		require.NoError(p, ep.PutValue(1-p.rank, r, 0, 1, 8))
	})
}

const tmpfsMagic = 0x01021994
