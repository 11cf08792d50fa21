package shmem_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// The reduction table defines each operator on the types the spec's
// table lists it for, and nothing else: bitwise operators on integers,
// orderings on integers and floating-point numbers, sums and products on
// every type.
func TestCombinerTable(t *testing.T) {
	ops := []shmem.ReduceOp{shmem.ReduceAnd, shmem.ReduceOr, shmem.ReduceXor, shmem.ReduceMax, shmem.ReduceMin, shmem.ReduceSum, shmem.ReduceProd}
	classes := map[string]int{"int": 7, "float": 4, "complex": 2} // operators defined, from the end of ops
	check := func(t *testing.T, class string, defined func(op shmem.ReduceOp) bool) {
		n := 0
		for _, op := range ops {
			if defined(op) {
				n++
			}
		}
		require.Equal(t, classes[class], n, "operators defined")
	}
	intType := func(name string, apply func(op shmem.ReduceOp) ([]int64, bool)) {
		t.Run(name, func(t *testing.T) {
			check(t, "int", func(op shmem.ReduceOp) bool { _, ok := apply(op); return ok })
			for op, want := range map[shmem.ReduceOp]int64{shmem.ReduceAnd: 6 & 3, shmem.ReduceOr: 6 | 3, shmem.ReduceXor: 6 ^ 3,
				shmem.ReduceMax: 6, shmem.ReduceMin: 3, shmem.ReduceSum: 9, shmem.ReduceProd: 18} {
				got, _ := apply(op)
				require.Equal(t, []int64{want, want}, got, "%v", op)
			}
		})
	}
	intType("int8", combineAs[int8])
	intType("int16", combineAs[int16])
	intType("int32", combineAs[int32])
	intType("int64", combineAs[int64])
	intType("int", combineAs[int])
	intType("uint8", combineAs[uint8])
	intType("uint16", combineAs[uint16])
	intType("uint32", combineAs[uint32])
	intType("uint64", combineAs[uint64])
	intType("uint", combineAs[uint])
	intType("uintptr", combineAs[uintptr])
	for name, apply := range map[string]func(op shmem.ReduceOp) ([]int64, bool){"float32": combineAs[float32], "float64": combineAs[float64]} {
		t.Run(name, func(t *testing.T) {
			check(t, "float", func(op shmem.ReduceOp) bool { _, ok := apply(op); return ok })
			got, _ := apply(shmem.ReduceProd)
			require.Equal(t, []int64{18, 18}, got)
		})
	}
	for name, ok := range map[string]func(op shmem.ReduceOp) bool{
		"complex64":  func(op shmem.ReduceOp) bool { _, ok := shmem.Combiner[complex64](op); return ok },
		"complex128": func(op shmem.ReduceOp) bool { _, ok := shmem.Combiner[complex128](op); return ok },
	} {
		t.Run(name, func(t *testing.T) { check(t, "complex", ok) })
	}
	_, ok := shmem.Combiner[int32](shmem.ReduceOp(0))
	require.False(t, ok, "no operator 0")
	require.Equal(t, "sum", shmem.ReduceSum.String())
	require.Equal(t, "ReduceOp(9)", fmt.Sprint(shmem.ReduceOp(9)))
}

// combineAs combines {6, 6} with {3, 3} by op as T, returned as int64.
func combineAs[T interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr | ~float32 | ~float64
}](op shmem.ReduceOp) ([]int64, bool) {
	f, ok := shmem.Combiner[T](op)
	if !ok {
		return nil, false
	}
	acc, in := []T{6, 6}, []T{3, 3}
	f(acc, in)
	return []int64{int64(acc[0]), int64(acc[1])}, true
}

// ReduceWith carries what Go has no type for, as C's long double
// travels: 16-byte elements combined by the caller, in both forms, on
// sets of every size, where all get the same bits in place and not.
func TestReduceWithBothForms(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(n, "PEs"), func(t *testing.T) {
			world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
				require.NoError(t, err)
				const m = 300 // more than one chunk of the tree
				src, err := shmem.Malloc[complex128](w, m)
				require.NoError(t, err)
				dst, err := shmem.Malloc[complex128](w, m)
				require.NoError(t, err)
				ps, err := shmem.Malloc[int64](w, shmem.ReduceSyncSize)
				require.NoError(t, err)
				// The combiner sees pairs of bytes as its own type: here
				// the real part is summed, the imaginary part maxed.
				combine := func(acc, in []complex128) {
					for i := range acc {
						acc[i] = complex(real(acc[i])+real(in[i]), max(imag(acc[i]), imag(in[i])))
					}
				}
				for i := range src {
					src[i] = complex(float64(pe+i), float64(pe*i%7))
				}
				want := make([]complex128, m)
				for i := range want {
					s, mx := 0.0, 0.0
					for p := range n {
						s += float64(p + i)
						mx = max(mx, float64(p*i%7))
					}
					want[i] = complex(s, mx)
				}
				require.NoError(t, w.BarrierAll())
				require.NoError(t, shmem.ReduceWith(w.TeamWorld(), "reduce", dst, src, combine))
				require.Equal(t, want, dst, "team form")
				evens := shmem.ActiveSet{Start: 0, LogStride: 1, Size: (n + 1) / 2}
				if pe%2 == 0 {
					require.NoError(t, shmem.ReduceWithActiveSet(w, "to_all", src, src, evens, nil, ps, combine))
					for i := range src {
						s, mx := 0.0, 0.0
						for p := 0; p < n; p += 2 {
							s += float64(p + i)
							mx = max(mx, float64(p*i%7))
						}
						require.Equal(t, complex(s, mx), src[i], "active set of the even PEs, in place, element %d", i)
					}
					for i, v := range ps {
						require.Equal(t, shmem.SyncValue, v, "pSync word %d", i)
					}
				}
				require.NoError(t, w.BarrierAll())
			})
		})
	}
}

// Combiner is asked on every call of a C reduction: it allocates
// nothing, and still answers out-of-range operators with false.
func TestCombinerAllocatesNothing(t *testing.T) {
	var ok bool
	allocs := testing.AllocsPerRun(100, func() {
		_, ok = shmem.Combiner[int64](shmem.ReduceSum)
		_, _ = shmem.Combiner[float64](shmem.ReduceMax)
		_, _ = shmem.Combiner[complex128](shmem.ReduceProd)
	})
	require.True(t, ok)
	require.Zero(t, allocs)
	_, ok = shmem.Combiner[int32](shmem.ReduceOp(200))
	require.False(t, ok)
	_, ok = shmem.Combiner[int32](shmem.ReduceOp(0))
	require.False(t, ok)
}
