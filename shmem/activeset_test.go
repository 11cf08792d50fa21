package shmem_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// activeSets are the sets each job size is tested on: the whole job, the
// shrinking suffixes 1.4 programs use, and strided sets.
func activeSets(n int) []shmem.ActiveSet {
	sets := []shmem.ActiveSet{{Start: 0, LogStride: 0, Size: n}}
	for i := 1; i < n; i++ {
		sets = append(sets, shmem.ActiveSet{Start: i, LogStride: 0, Size: n - i})
	}
	if n >= 3 {
		sets = append(sets, shmem.ActiveSet{Start: 0, LogStride: 1, Size: (n + 1) / 2})
	}
	if n >= 4 {
		sets = append(sets, shmem.ActiveSet{Start: 1, LogStride: 1, Size: n / 2},
			shmem.ActiveSet{Start: 0, LogStride: 2, Size: 1})
	}
	return sets
}

// asBuffers are the symmetric buffers of one run, pSync arrays in pairs
// so consecutive calls can alternate them.
type asBuffers struct {
	bar, coll, red [2][]int64
	bcast          []int64
	cells          []int64
	red3           map[string]any // [3][]T: source, dest, pWrk of a reduction
}

func newASBuffers(t *testing.T, m *symMem) *asBuffers {
	var b asBuffers
	for i := range 2 {
		b.bar[i] = symMake[int64](t, m, shmem.BarrierSyncSize)
		b.coll[i] = symMake[int64](t, m, shmem.CollectSyncSize)
		b.red[i] = symMake[int64](t, m, shmem.ReduceSyncSize)
	}
	b.bcast = symMake[int64](t, m, shmem.BcastSyncSize)
	b.cells = symMake[int64](t, m, 2)
	b.red3 = map[string]any{}
	return &b
}

// asAlloc allocates, collectively on every PE, the buffers of a
// reduction of count elements of T; members of a set take them with
// asGet, since a set's members alone cannot allocate.
func asAlloc[T shmem.Elem](t *testing.T, m *symMem, b *asBuffers, count int) {
	var bufs [3][]T
	for i, n := range []int{count, count, shmem.ReduceWorkSize(count)} {
		bufs[i] = symMake[T](t, m, n)
	}
	b.red3[fmt.Sprintf("%T/%d", bufs[0], count)] = bufs
}

func asGet[T shmem.Elem](b *asBuffers, count int, val func(r, i int) T, me int) (src, dest, wrk []T) {
	bufs := b.red3[fmt.Sprintf("%T/%d", []T(nil), count)].([3][]T)
	for i := range bufs[0] {
		bufs[0][i] = val(me, i)
	}
	return bufs[0], bufs[1], bufs[2]
}

// allocReductions allocates what activeSetRounds reduces.
func allocReductions(t *testing.T, m *symMem, b *asBuffers) {
	asAlloc[int64](t, m, b, 1)
	asAlloc[float64](t, m, b, 300)
	asAlloc[uint32](t, m, b, 5)
	asAlloc[int16](t, m, b, 600)
	asAlloc[complex128](t, m, b, 7)
	asAlloc[complex64](t, m, b, 260)
}

// requireClear checks that every pSync word is back at SyncValue.
func (b *asBuffers) requireClear(t *testing.T) {
	for _, ps := range [][]int64{b.bar[0], b.bar[1], b.coll[0], b.coll[1], b.red[0], b.red[1], b.bcast} {
		for i, v := range ps {
			require.Equal(t, shmem.SyncValue, v, "pSync word %d after the collectives", i)
		}
	}
}

// Every active-set collective on every set of 1 to 4 PEs, several rounds
// of each, alternating two pSync arrays where the spec lets consecutive
// calls follow each other without a barrier; with dest, pSync and pWrk
// in the heap, then in registered static data, where C programs keep
// them.
func TestActiveSetCollectives(t *testing.T) {
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
				require.NoError(t, err)
				symMems(t, w, 64<<10, func(where string, sm *symMem) {
					b := newASBuffers(t, sm)
					allocReductions(t, sm, b)
					const m = 3
					dest := symMake[int64](t, sm, 4*n*m)
					dest32 := symMake[int32](t, sm, 4*n*m)
					for si, as := range activeSets(n) {
						if as.Rank(pe) < 0 {
							continue
						}
						activeSetRounds(t, w, b, as, dest, dest32, fmt.Sprintf("%s: set %d %+v", where, si, as))
					}
					require.NoError(t, w.BarrierAll())
					b.requireClear(t)
				})
			})
		})
	}
}

func activeSetRounds(t *testing.T, w *shmem.World, b *asBuffers, as shmem.ActiveSet, dest []int64, dest32 []int32, name string) {
	me := as.Rank(w.MyPE())
	size := as.Size
	const m = 3
	val := func(r, i, round int) int64 { return int64(1000*r + 10*i + round) }
	for round := range 4 {
		bar := b.bar[round%2]
		src := make([]int64, size*m)
		for i := range src {
			src[i] = val(me, i, round)
		}

		// Broadcast: the root's dest is left alone, as in 1.4.
		for i := range dest {
			dest[i] = -1
		}
		require.NoError(t, w.BarrierActiveSet(as, bar))
		root := round % size
		require.NoError(t, shmem.BroadcastActiveSet(w, dest, src[:m], root, as, b.bcast), name)
		for i := range m {
			want := val(root, i, round)
			if me == root {
				want = -1
			}
			require.Equal(t, want, dest[i], "%s: broadcast round %d element %d", name, round, i)
		}
		require.NoError(t, w.BarrierActiveSet(as, b.bar[1-round%2]))

		// fcollect then collect, alternating pSync, no barrier between.
		require.NoError(t, shmem.FCollectActiveSet(w, dest, src[:m], as, b.coll[0]), name)
		for r := range size {
			for i := range m {
				require.Equal(t, val(r, i, round), dest[r*m+i], "%s: fcollect round %d", name, round)
			}
		}
		// Rank r contributes (r+round)%3 elements, zero included.
		require.NoError(t, shmem.CollectActiveSet(w, dest[size*m:], src[:(me+round)%3], as, b.coll[1]), name)
		at := size * m
		for r := range size {
			for i := range (r + round) % 3 {
				require.Equal(t, val(r, i, round), dest[at], "%s: collect round %d", name, round)
				at++
			}
		}

		// alltoall in 32 bits, alltoalls in 64, same pSync back to back.
		src32 := make([]int32, size*m)
		for i := range src32 {
			src32[i] = int32(val(me, i, round))
		}
		require.NoError(t, shmem.AlltoallActiveSet(w, dest32, src32, m, as, b.coll[round%2]), name)
		for r := range size {
			for i := range m {
				require.Equal(t, int32(val(r, me*m+i, round)), dest32[r*m+i], "%s: alltoall round %d", name, round)
			}
		}
		require.NoError(t, shmem.AlltoallsActiveSet(w, dest[2*size*m:], src, 2, 1, 1, as, b.coll[round%2]), name)
		for r := range size {
			require.Equal(t, val(r, me, round), dest[2*size*m+r*2], "%s: alltoalls round %d", name, round)
		}

		// Reductions back to back, alternating pSync, sharing one pWrk.
		asReduce(t, w, b, as, name, round, 1, func(r, i int) int64 { return int64(r*7 + i - 3) })
		asReduce(t, w, b, as, name, round, 300, func(r, i int) float64 { return float64(r) + float64(i%13)/8 })
		asBitwise(t, w, b, as, name, round, 5, func(r, i int) uint32 { return uint32(1<<(r%31) | i<<8 | 1) })
		asBitwise(t, w, b, as, name, round, 600, func(r, i int) int16 { return int16(1<<(r%15) | i&0x70 | 1) })
		asArith(t, w, b, as, name, round, 7, func(r, i int) complex128 { return complex(float64(r+1), float64(i%3)) })
		asArith(t, w, b, as, name, round, 260, func(r, i int) complex64 { return complex(float32(i%2), float32(r)) })
	}
	// The same pSync for many barriers in a row; each orders a put made
	// before it. Round r writes cell r%2, which its reader checked before
	// entering barrier r-1.
	cells := b.cells
	right := as.PE((me + 1) % size)
	left := (me + size - 1) % size
	for r := range 50 {
		require.NoError(t, shmem.P(w, &cells[r%2], int64(r*100+me), right))
		require.NoError(t, w.BarrierActiveSet(as, b.bar[0]))
		require.Equal(t, int64(r*100+left), cells[r%2], "%s: barrier %d", name, r)
	}
	require.NoError(t, w.BarrierActiveSet(as, b.bar[0]))
}

func fold[T any](size, count int, val func(r, i int) T, f func(a, b T) T) []T {
	out := make([]T, count)
	for i := range out {
		out[i] = val(0, i)
		for r := 1; r < size; r++ {
			out[i] = f(out[i], val(r, i))
		}
	}
	return out
}

func asArith[T shmem.ArithElem](t *testing.T, w *shmem.World, b *asBuffers, as shmem.ActiveSet, name string, round, count int, val func(r, i int) T) {
	me := as.Rank(w.MyPE())
	src, dest, wrk := asGet(b, count, val, me)
	require.NoError(t, shmem.SumToAll(w, dest, src, as, wrk, b.red[0]))
	require.Equal(t, fold(as.Size, count, val, func(a, b T) T { return a + b }), dest, "%s: sum of %d %T, round %d", name, count, dest, round)
	// In place, on the other pSync, straight after.
	require.NoError(t, shmem.ProdToAll(w, src, src, as, wrk, b.red[1]))
	require.Equal(t, fold(as.Size, count, val, func(a, b T) T { return a * b }), src, "%s: product of %d %T, round %d", name, count, src, round)
	// Barriers between reductions, on a pSync of their own.
	require.NoError(t, w.BarrierActiveSet(as, b.bar[0]))
}

func asReduce[T shmem.OrderedElem](t *testing.T, w *shmem.World, b *asBuffers, as shmem.ActiveSet, name string, round, count int, val func(r, i int) T) {
	asArith(t, w, b, as, name, round, count, val)
	me := as.Rank(w.MyPE())
	src, dest, wrk := asGet(b, count, val, me)
	require.NoError(t, shmem.MaxToAll(w, dest, src, as, wrk, b.red[0]))
	require.Equal(t, fold(as.Size, count, val, func(a, b T) T { return max(a, b) }), dest, "%s: max, round %d", name, round)
	require.NoError(t, shmem.MinToAll(w, dest, src, as, wrk, b.red[1]))
	require.Equal(t, fold(as.Size, count, val, func(a, b T) T { return min(a, b) }), dest, "%s: min, round %d", name, round)
	// Barriers between reductions, on a pSync of their own.
	require.NoError(t, w.BarrierActiveSet(as, b.bar[0]))
}

func asBitwise[T shmem.BitwiseElem](t *testing.T, w *shmem.World, b *asBuffers, as shmem.ActiveSet, name string, round, count int, val func(r, i int) T) {
	asReduce(t, w, b, as, name, round, count, val)
	me := as.Rank(w.MyPE())
	src, dest, wrk := asGet(b, count, val, me)
	require.NoError(t, shmem.AndToAll(w, dest, src, as, wrk, b.red[0]))
	require.Equal(t, fold(as.Size, count, val, func(a, b T) T { return a & b }), dest, "%s: and, round %d", name, round)
	require.NoError(t, shmem.OrToAll(w, dest, src, as, wrk, b.red[1]))
	require.Equal(t, fold(as.Size, count, val, func(a, b T) T { return a | b }), dest, "%s: or, round %d", name, round)
	require.NoError(t, shmem.XorToAll(w, dest, src, as, wrk, b.red[0]))
	require.Equal(t, fold(as.Size, count, val, func(a, b T) T { return a ^ b }), dest, "%s: xor, round %d", name, round)
	// Barriers between reductions, on a pSync of their own.
	require.NoError(t, w.BarrierActiveSet(as, b.bar[0]))
}

// On 11 PEs the trees have inner nodes that are not the root, and a
// reduction larger than pWrk goes in several chunks, through a pWrk in
// the heap and then through one in registered static data.
func TestActiveSetTwoLevelTree(t *testing.T) {
	const n = 11
	world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		symMems(t, w, 64<<10, func(where string, sm *symMem) {
			b := newASBuffers(t, sm)
			asAlloc[int64](t, sm, b, 2)
			asAlloc[float64](t, sm, b, 1000)
			wrk64 := symMake[uint64](t, sm, shmem.ReduceMinWrkdataSize)
			bits := symMake[uint64](t, sm, 2)
			as := shmem.ActiveSet{Start: 0, LogStride: 0, Size: n}
			name := "11 PEs, " + where
			for round := range 3 {
				asReduce(t, w, b, as, name, round, 2, func(r, i int) int64 { return int64(r*3 - i) })
				asReduce(t, w, b, as, name, round, 1000, func(r, i int) float64 { return float64(r%3) + float64(i%7)/4 })
				// An inexact sum: every PE gets the same bits.
				src, dest, wrk := asGet(b, 1000, func(r, i int) float64 { return 1 / float64(1+r+i%7) }, pe)
				require.NoError(t, shmem.SumToAll(w, dest, src, as, wrk, b.red[0]))
				bits[0] = math.Float64bits(dest[999])
				require.NoError(t, shmem.MinToAll(w, bits[1:], bits[:1], as, wrk64, b.red[1]))
				require.Equal(t, bits[0], bits[1], "%s round %d: PEs got different bits of one sum", name, round)
				for range 20 {
					require.NoError(t, w.BarrierActiveSet(as, b.bar[round%2]))
				}
			}
			require.NoError(t, w.BarrierAll())
			b.requireClear(t)
		})
	})
}

func TestActiveSetErrors(t *testing.T) {
	world(t, 4, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		ps, err := shmem.Malloc[int64](w, shmem.SyncSize)
		require.NoError(t, err)
		dest, err := shmem.Malloc[int64](w, 16)
		require.NoError(t, err)
		wrk, err := shmem.Malloc[int64](w, shmem.ReduceMinWrkdataSize)
		require.NoError(t, err)
		all := shmem.ActiveSet{Start: 0, LogStride: 0, Size: 4}
		for _, c := range []struct {
			as   shmem.ActiveSet
			says string
		}{
			{shmem.ActiveSet{Start: 0, LogStride: 0, Size: 0}, "size must be at least 1"},
			{shmem.ActiveSet{Start: 0, LogStride: -1, Size: 2}, "log stride must not be negative"},
			{shmem.ActiveSet{Start: 4, LogStride: 0, Size: 1}, "start is not a PE"},
			{shmem.ActiveSet{Start: -1, LogStride: 0, Size: 1}, "start is not a PE"},
			{shmem.ActiveSet{Start: 0, LogStride: 1, Size: 3}, "past the last PE 3"},
			{shmem.ActiveSet{Start: 1, LogStride: 63, Size: 2}, "past the last PE 3"},
			{shmem.ActiveSet{Start: pe ^ 1, LogStride: 0, Size: 1}, fmt.Sprintf("the calling PE %d is not a member", pe)},
		} {
			err := w.BarrierActiveSet(c.as, ps)
			require.ErrorIs(t, err, shmem.ErrInvalid, "%+v", c.as)
			require.ErrorContains(t, err, c.says)
		}
		require.ErrorIs(t, w.BarrierActiveSet(all, ps[:1]), shmem.ErrInvalid, "pSync too short")
		require.ErrorIs(t, w.BarrierActiveSet(all, make([]int64, 2)), shmem.ErrOutOfBounds, "pSync not symmetric")
		require.ErrorIs(t, shmem.BroadcastActiveSet(w, dest, []int64{1}, 4, all, ps), shmem.ErrInvalid, "root past the set")
		require.ErrorIs(t, shmem.FCollectActiveSet(w, dest, make([]int64, 5), all, ps), shmem.ErrInvalid, "dest too short")
		// pWrk is never used, so one shorter than the spec asks is no
		// hazard: programs in the wild pass ReduceMinWrkdataSize elements
		// whatever they reduce.
		for i := range wrk {
			wrk[i] = -7
		}
		require.NoError(t, shmem.SumToAll(w, dest, make([]int64, 16), all, wrk[:1], ps), "pWrk shorter than the spec asks")
		for i, v := range wrk {
			require.Equal(t, int64(-7), v, "pWrk element %d was written", i)
		}
		require.ErrorIs(t, shmem.SumToAll(w, dest[1:], dest[:4], all, wrk, ps), shmem.ErrInvalid, "overlap")
		// dest symmetric on the set of every PE too, which the World's
		// team reduces through its own areas, as on any other set.
		require.ErrorIs(t, shmem.SumToAll(w, make([]int64, 4), dest[:4], all, wrk, ps), shmem.ErrOutOfBounds, "dest not symmetric")
		require.ErrorIs(t, shmem.AlltoallsActiveSet(w, dest, make([]int64, 8), 0, 1, 1, all, ps), shmem.ErrInvalid, "zero stride")
		err = shmem.AlltoallsActiveSet(w, dest, make([]int64, 8), 1, 3, math.MaxInt/4, all, ps)
		require.ErrorIs(t, err, shmem.ErrInvalid, "a span that overflows")
		require.ErrorContains(t, err, "overflows")
		// Zero elements: nothing to do, and no waiting for the others.
		require.NoError(t, shmem.BroadcastActiveSet[int64](w, nil, nil, 0, all, ps))
		require.NoError(t, shmem.SumToAll[int64](w, nil, nil, all, nil, ps))
		require.NoError(t, shmem.AlltoallActiveSet[int64](w, nil, nil, 0, all, ps))
		require.NoError(t, w.BarrierAll())
		for i, v := range ps {
			require.Equal(t, shmem.SyncValue, v, "pSync word %d after refused calls", i)
		}
	})
}

func TestActiveSetRank(t *testing.T) {
	as := shmem.ActiveSet{Start: 1, LogStride: 1, Size: 3}
	for pe, want := range []int{-1, 0, -1, 1, -1, 2, -1, -1} {
		require.Equal(t, want, as.Rank(pe), "PE %d", pe)
		if want >= 0 {
			require.Equal(t, pe, as.PE(want))
		}
	}
	require.Equal(t, shmem.CollectSyncSize, shmem.SyncSize)
	require.Equal(t, shmem.ReduceMinWrkdataSize, shmem.ReduceWorkSize(0))
	require.Equal(t, 501, shmem.ReduceWorkSize(1000))
}

// Collects and fcollects back to back on one pSync, with no barrier: a
// member that finishes first signals the next call's counts and parts
// while the others still wait for this one's, which must neither pass for
// this call's nor be lost. Each call has its own dest, checked at the end.
func TestActiveSetCollectBackToBack(t *testing.T) {
	const n, calls = 4, 40
	world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		ps, err := shmem.Malloc[int64](w, shmem.CollectSyncSize)
		require.NoError(t, err)
		// Call k takes at most n*3 elements at k*n*3.
		dest, err := shmem.Malloc[int64](w, calls*n*3)
		require.NoError(t, err)
		count := func(r, k int) int { return (r + k) % 4 } // 0 to 3
		val := func(r, k, i int) int64 { return int64(r<<20 | k<<8 | i) }
		for _, as := range []shmem.ActiveSet{{Start: 0, LogStride: 0, Size: n}, {Start: 1, LogStride: 0, Size: n - 1}} {
			me := as.Rank(pe)
			if me < 0 {
				require.NoError(t, w.BarrierAll())
				require.NoError(t, w.BarrierAll())
				continue
			}
			for i := range dest {
				dest[i] = -1
			}
			require.NoError(t, w.BarrierAll())
			for k := range calls {
				d := dest[k*n*3 : (k+1)*n*3]
				if k%3 == 2 {
					src := []int64{val(me, k, 0), val(me, k, 1)}
					require.NoError(t, shmem.FCollectActiveSet(w, d, src, as, ps))
					continue
				}
				src := make([]int64, count(me, k))
				for i := range src {
					src[i] = val(me, k, i)
				}
				require.NoError(t, shmem.CollectActiveSet(w, d, src, as, ps))
			}
			for k := range calls {
				d := dest[k*n*3 : (k+1)*n*3]
				at := 0
				for r := range as.Size {
					c := count(r, k)
					if k%3 == 2 {
						c = 2
					}
					for i := range c {
						require.Equal(t, val(r, k, i), d[at], "set %+v call %d: rank %d element %d", as, k, r, i)
						at++
					}
				}
			}
			require.NoError(t, w.BarrierAll())
			for i, v := range ps {
				require.Equal(t, shmem.SyncValue, v, "set %+v: pSync word %d", as, i)
			}
		}
	})
}
