package shmem_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

// Every collective, at team sizes 1 to 5, back to back into the same
// buffers with no barrier between them; dest in the heap, then in
// registered static data, where a C program's globals are.
func TestCollectivesSizes(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
				require.NoError(t, err)
				symMems(t, w, 64<<10, func(where string, sm *symMem) {
					collectivesRound(t, w.TeamWorld(), sm, where)
				})
			})
		})
	}
}

func collectivesRound(t *testing.T, tm *shmem.Team, sm *symMem, where string) {
	pe, n := tm.MyPE(), tm.NPEs()
	const m = 5
	dest := symMake[int32](t, sm, 4*n*m)
	// Larger than the tree carries: broadcast and fcollect go
	// straight into dest.
	const big = 700
	bigDest := symMake[int32](t, sm, n*big)
	sum := symMake[int64](t, sm, 3)
	for iter := range 4 {
		src := make([]int32, n*m)
		for i := range src {
			src[i] = int32(1000*pe + 10*i + iter)
		}
		root := iter % n
		require.NoError(t, shmem.Broadcast(tm, dest, src[:m], root))
		for i := range m {
			require.Equal(t, int32(1000*root+10*i+iter), dest[i], "broadcast iter %d", iter)
		}
		require.NoError(t, shmem.FCollect(tm, dest, src[:m]))
		for p := range n {
			for i := range m {
				require.Equal(t, int32(1000*p+10*i+iter), dest[p*m+i], "fcollect iter %d", iter)
			}
		}
		// PE p contributes p+iter%2 elements.
		require.NoError(t, shmem.Collect(tm, dest, src[:pe+iter%2]))
		at := 0
		for p := range n {
			for i := range p + iter%2 {
				require.Equal(t, int32(1000*p+10*i+iter), dest[at], "collect iter %d", iter)
				at++
			}
		}
		require.NoError(t, shmem.Alltoall(tm, dest, src, m))
		for p := range n {
			for i := range m {
				require.Equal(t, int32(1000*p+10*(pe*m+i)+iter), dest[p*m+i], "alltoall iter %d", iter)
			}
		}
		clear(dest)
		require.NoError(t, shmem.Alltoalls(tm, dest, src, 2, 1, 2))
		for p := range n {
			for i := range 2 {
				require.Equal(t, int32(1000*p+10*(pe*2+i)+iter), dest[(p*2+i)*2], "alltoalls iter %d", iter)
			}
		}
		require.NoError(t, shmem.SumReduce(tm, sum, []int64{int64(pe), int64(iter), 1}))
		require.Equal(t, []int64{int64(n * (n - 1) / 2), int64(n * iter), int64(n)}, sum, "%s: sum iter %d", where, iter)

		src = make([]int32, big)
		for i := range src {
			src[i] = int32(1000*pe + i + iter)
		}
		require.NoError(t, shmem.Broadcast(tm, bigDest, src, root))
		for i := range big {
			require.Equal(t, int32(1000*root+i+iter), bigDest[i], "%s: large broadcast iter %d", where, iter)
		}
		require.NoError(t, shmem.FCollect(tm, bigDest, src))
		for p := range n {
			for i := range big {
				require.Equal(t, int32(1000*p+i+iter), bigDest[p*big+i], "%s: large fcollect iter %d", where, iter)
			}
		}
	}
}

func reduceCase[T shmem.ArithElem](t *testing.T, tm *shmem.Team, pe, n, count int, val func(pe, i int) T) {
	src := make([]T, count)
	for i := range src {
		src[i] = val(pe, i)
	}
	want := func(f func(a, b T) T) []T {
		out := make([]T, count)
		for i := range out {
			out[i] = val(0, i)
			for p := 1; p < n; p++ {
				out[i] = f(out[i], val(p, i))
			}
		}
		return out
	}
	got := make([]T, count)
	require.NoError(t, shmem.SumReduce(tm, got, src))
	require.Equal(t, want(func(a, b T) T { return a + b }), got, "sum of %d %T", count, got)
	inPlace := slices.Clone(src)
	require.NoError(t, shmem.ProdReduce(tm, inPlace, inPlace))
	require.Equal(t, want(func(a, b T) T { return a * b }), inPlace, "in-place product of %d %T", count, got)
}

func orderedCase[T shmem.OrderedElem](t *testing.T, tm *shmem.Team, pe, n, count int, val func(pe, i int) T) {
	reduceCase(t, tm, pe, n, count, val)
	src := make([]T, count)
	for i := range src {
		src[i] = val(pe, i)
	}
	lo, hi := make([]T, count), make([]T, count)
	require.NoError(t, shmem.MinReduce(tm, lo, src))
	require.NoError(t, shmem.MaxReduce(tm, hi, src))
	for i := range count {
		wl, wh := val(0, i), val(0, i)
		for p := 1; p < n; p++ {
			wl, wh = min(wl, val(p, i)), max(wh, val(p, i))
		}
		require.Equal(t, wl, lo[i])
		require.Equal(t, wh, hi[i])
	}
}

func bitwiseCase[T shmem.BitwiseElem](t *testing.T, tm *shmem.Team, pe, n, count int) {
	val := func(pe, i int) T { return T(1<<(pe%7) | (i & 0x70) | 1) }
	orderedCase(t, tm, pe, n, count, val)
	src := make([]T, count)
	for i := range src {
		src[i] = val(pe, i)
	}
	and, or, xor := make([]T, count), make([]T, count), make([]T, count)
	require.NoError(t, shmem.AndReduce(tm, and, src))
	require.NoError(t, shmem.OrReduce(tm, or, src))
	require.NoError(t, shmem.XorReduce(tm, xor, src))
	for i := range count {
		wa, wo, wx := val(0, i), val(0, i), val(0, i)
		for p := 1; p < n; p++ {
			wa, wo, wx = wa&val(p, i), wo|val(p, i), wx^val(p, i)
		}
		require.Equal(t, wa, and[i])
		require.Equal(t, wo, or[i])
		require.Equal(t, wx, xor[i])
	}
}

// Every reduction on every type class, across sizes that span several
// messages, and zero elements.
func TestReductions(t *testing.T) {
	for _, n := range []int{1, 2, 3, 6} {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
				require.NoError(t, err)
				tm := w.TeamWorld()
				for _, count := range []int{0, 1, 7, 1000} {
					bitwiseCase[int8](t, tm, pe, n, count)
					bitwiseCase[uint16](t, tm, pe, n, count)
					bitwiseCase[int64](t, tm, pe, n, count)
					bitwiseCase[uintptr](t, tm, pe, n, count)
					orderedCase(t, tm, pe, n, count, func(pe, i int) float64 { return float64(pe) + float64(i)/8 })
					orderedCase(t, tm, pe, n, count, func(pe, i int) float32 { return float32(pe*i%5) - 2 })
					reduceCase(t, tm, pe, n, count, func(pe, i int) complex128 { return complex(float64(pe), float64(i%3)) })
					reduceCase(t, tm, pe, n, count, func(pe, i int) complex64 { return complex(float32(i%2), float32(pe)) })
				}
				require.ErrorIs(t, shmem.SumReduce(tm, make([]int, 1), make([]int, 2)), core.ErrInvalid)
			})
		})
	}
}

func TestCollectiveErrors(t *testing.T) {
	world(t, 2, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		tm := w.TeamWorld()
		dest, err := shmem.Malloc[int](w, 4)
		require.NoError(t, err)
		require.ErrorIs(t, shmem.Broadcast(tm, dest, []int{1}, 2), core.ErrInvalid, "root past the team")
		require.ErrorIs(t, shmem.Broadcast(tm, make([]int, 4), []int{1}, 0), core.ErrOutOfBounds, "dest not symmetric")
		require.ErrorIs(t, shmem.FCollect(tm, dest, []int{1, 2, 3}), core.ErrInvalid, "dest too short")
		require.ErrorIs(t, shmem.Alltoall(tm, dest, []int{1, 2, 3}, 2), core.ErrInvalid, "source too short")
		require.ErrorIs(t, shmem.Alltoalls(tm, dest, []int{1, 2}, 0, 1, 1), core.ErrInvalid, "zero stride")
		var nilTeam *shmem.Team
		require.ErrorIs(t, nilTeam.Sync(), core.ErrInvalid)
		require.NoError(t, shmem.Broadcast(tm, dest, nil, 0), "zero elements")
		require.NoError(t, shmem.Free(w, dest))
	})
}

// On 11 PEs the combining tree has two levels: broadcasts from every root,
// reductions and syncs, back to back, exercise inner nodes that are not
// the root.
func TestCollectivesTwoLevelTree(t *testing.T) {
	const n = 11
	world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		tm := w.TeamWorld()
		dest, err := shmem.Malloc[int64](w, 2)
		require.NoError(t, err)
		for round := range 3 * n {
			root := (round * 4) % n
			require.NoError(t, shmem.Broadcast(tm, dest, []int64{int64(pe), int64(round)}, root))
			require.Equal(t, []int64{int64(root), int64(round)}, dest)
			var got [2]float64
			require.NoError(t, shmem.SumReduce(tm, got[:], []float64{float64(pe), float64(round)}))
			require.Equal(t, [2]float64{n * (n - 1) / 2, float64(n * round)}, got)
			require.NoError(t, tm.Sync())
		}
		require.NoError(t, shmem.Free(w, dest))
	})
}

// Reductions alone, back to back with no other collective between them,
// reuse their buffers every other call; every PE must get the same bits of
// a floating-point sum whose value depends on the order of the additions.
func TestReduceBackToBack(t *testing.T) {
	for _, n := range []int{3, 4, 7} {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
				require.NoError(t, err)
				tm := w.TeamWorld()
				for round := range 200 {
					var sum [2]int64
					require.NoError(t, shmem.SumReduce(tm, sum[:], []int64{int64(pe * round), 1}))
					require.Equal(t, [2]int64{int64(n * (n - 1) / 2 * round), int64(n)}, sum, "round %d", round)
					var f [1]float64
					require.NoError(t, shmem.SumReduce(tm, f[:], []float64{1 / float64(3+pe+round)}))
					bits := []uint64{math.Float64bits(f[0])}
					lo, hi := make([]uint64, 1), make([]uint64, 1)
					require.NoError(t, shmem.MinReduce(tm, lo, bits))
					require.NoError(t, shmem.MaxReduce(tm, hi, bits))
					require.Equal(t, lo, hi, "round %d: PEs got different bits of one sum", round)
				}
			})
		})
	}
}

// Large reductions on the World's team move in many pieces, with blocks of
// unequal length when the piece does not divide by the team size; back to
// back, each must give exactly the sum in rank order, floating-point too.
func TestReduceLargeInPieces(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
				require.NoError(t, err)
				tm := w.TeamWorld()
				const count = 100003
				val := func(pe, i, round int) float64 { return 1 / float64(1+pe+i%97+round) }
				src, got, want := make([]float64, count), make([]float64, count), make([]float64, count)
				for round := range 3 {
					for i := range src {
						src[i] = val(pe, i, round)
						want[i] = val(0, i, round)
						for p := 1; p < n; p++ {
							want[i] += val(p, i, round)
						}
					}
					require.NoError(t, shmem.SumReduce(tm, got, src))
					for i := range want {
						if got[i] != want[i] {
							require.Equal(t, want[i], got[i], "round %d: element %d", round, i)
						}
					}
					ints := make([]int64, count+round)
					for i := range ints {
						ints[i] = int64(pe*i + round)
					}
					require.NoError(t, shmem.SumReduce(tm, ints, ints))
					for i := range ints {
						if w := int64(n*(n-1)/2*i + n*round); ints[i] != w {
							require.Equal(t, w, ints[i], "round %d: element %d in place", round, i)
						}
					}
				}
			})
		})
	}
}
