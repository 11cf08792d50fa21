package conformance

import (
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func collCases() []Case {
	return []Case{
		{Name: "Coll/SyncBackToBack", Needs: rmaCaps, Shmem: caseSyncBackToBack},
		{Name: "Coll/Broadcast", Needs: rmaCaps, Shmem: caseBroadcast},
		{Name: "Coll/SourceReadyAtCall", Needs: rmaCaps, Shmem: caseCollSourceReadyAtCall},
		{Name: "Coll/Collect", Needs: rmaCaps, Shmem: caseCollect},
		{Name: "Coll/Alltoall", Needs: rmaCaps, Shmem: caseAlltoall},
		{Name: "Coll/GathersWaitForReaders", Needs: rmaCaps, Shmem: caseGathersWaitForReaders},
		{Name: "Coll/Reduce", Needs: rmaCaps, Shmem: caseReduce},
		{Name: "Coll/OddTeams", Needs: rmaCaps, MinPEs: 3, Shmem: caseCollOddTeams},
		{Name: "Coll/BadInput", Needs: rmaCaps, Shmem: caseCollBadInput},
	}
}

// Team syncs back to back order puts made between them, on every round.
func caseSyncBackToBack(t *T, w *shmem.World) {
	left, right := neighbours(w)
	v, err := shmem.Malloc[int64](w, 1)
	require.NoError(t, err)
	tm := w.TeamWorld()
	for round := int64(1); round <= 200; round++ {
		require.NoError(t, shmem.P(w, &v[0], round*10+int64(w.MyPE()), right))
		require.NoError(t, w.Quiet())
		require.NoError(t, tm.Sync())
		if v[0] != round*10+int64(left) {
			t.Fatalf("round %d: %d after sync, want %d", round, v[0], round*10+int64(left))
		}
		require.NoError(t, tm.Sync())
	}
	require.NoError(t, shmem.Free(w, v))
}

// Broadcast from every root in turn, at sizes from zero to several
// messages; the root's dest gets the data too. OpenSHMEM leaves it to the
// caller to have dest ready on every member before a broadcast, so the
// rounds go back to back into a buffer each, with nothing between them:
// a root may be rounds ahead of a member, and the member must still take
// each round's data for its own (1.6, shmem_broadcast). A sync between
// sizes readies the buffers again.
func caseBroadcast(t *T, w *shmem.World) {
	tm := w.TeamWorld()
	const maxCount = 5000
	rounds := 2 * w.NPEs()
	dest, err := shmem.Malloc[float64](w, rounds*maxCount)
	require.NoError(t, err)
	for _, count := range []int{0, 1, 3, maxCount} {
		for round := range rounds {
			root := round % w.NPEs()
			src := make([]float64, count)
			for i := range src {
				src[i] = float64(w.MyPE()*1e6 + i*10 + round)
			}
			d := dest[round*maxCount : (round+1)*maxCount]
			require.NoError(t, shmem.Broadcast(tm, d, src, root))
			for i := range count {
				if want := float64(root*1e6 + i*10 + round); d[i] != want {
					t.Fatalf("broadcast of %d from %d, round %d: dest[%d] = %v, want %v", count, root, round, i, d[i], want)
				}
			}
		}
		require.NoError(t, tm.Sync())
	}
	require.NoError(t, shmem.Free(w, dest))
}

// FCollect and Collect, back to back, with contributions of different
// lengths, zero included, small and large.
func caseCollect(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	tm := w.TeamWorld()
	const most = 700
	dest, err := shmem.Malloc[uint16](w, most*n)
	require.NoError(t, err)
	val := func(pe, i, round int) uint16 { return uint16(pe*1000 + i*7 + round) }
	for round, m := range []int{1, 6, 11, 16, 21, 26, most, 300} {
		src := make([]uint16, most)
		for i := range src {
			src[i] = val(me, i, round)
		}
		require.NoError(t, shmem.FCollect(tm, dest, src[:m]))
		for p := range n {
			for i := range m {
				if dest[p*m+i] != val(p, i, round) {
					t.Fatalf("fcollect of %d, round %d: element %d from PE %d is %d", m, round, i, p, dest[p*m+i])
				}
			}
		}
		mine := (me + round) % 3 * 9 // 0, 9 or 18 elements
		require.NoError(t, shmem.Collect(tm, dest, src[:mine]))
		at := 0
		for p := range n {
			for i := range (p + round) % 3 * 9 {
				if dest[at] != val(p, i, round) {
					t.Fatalf("collect, round %d: element %d from PE %d is %d", round, i, p, dest[at])
				}
				at++
			}
		}
	}
	require.NoError(t, shmem.Free(w, dest))
}

// Alltoall and strided Alltoalls, back to back.
func caseAlltoall(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	tm := w.TeamWorld()
	const m = 4
	dest, err := shmem.Malloc[complex64](w, 3*n*m)
	require.NoError(t, err)
	val := func(from, to, k, round int) complex64 { return complex(float32(from*100+to*10+k), float32(round)) }
	for round := range 4 {
		src := make([]complex64, n*m)
		for to := range n {
			for k := range m {
				src[to*m+k] = val(me, to, k, round)
			}
		}
		require.NoError(t, shmem.Alltoall(tm, dest, src, m))
		for from := range n {
			for k := range m {
				if got := dest[from*m+k]; got != val(from, me, k, round) {
					t.Fatalf("alltoall round %d: element %d from PE %d is %v", round, k, from, got)
				}
			}
		}
		// Strided: source every other element, dest every third.
		strided := make([]complex64, 2*n*m)
		for to := range n {
			for k := range m {
				strided[2*(to*m+k)] = val(me, to, k, round+10)
			}
		}
		clear(dest)
		require.NoError(t, shmem.Alltoalls(tm, dest, strided, 3, 2, m))
		for from := range n {
			for k := range m {
				if got := dest[3*(from*m+k)]; got != val(from, me, k, round+10) {
					t.Fatalf("alltoalls round %d: element %d from PE %d is %v", round, k, from, got)
				}
			}
		}
	}
	require.NoError(t, shmem.Free(w, dest))
}

// A team's fcollect and alltoall put into every member's dest, which a
// member may still be reading after the last call returned there: a
// member that lingers over its dest, then clears it, must find the last
// call's data and nothing of the next call's, whoever is fast.
func caseGathersWaitForReaders(t *T, w *shmem.World) {
	n, me := w.NPEs(), w.MyPE()
	tm := w.TeamWorld()
	const m = 3
	dest, err := shmem.Malloc[int64](w, n*m)
	require.NoError(t, err)
	src := make([]int64, n*m)
	val := func(from, to, k, round int) int64 { return int64(round*1000000 + from*10000 + to*100 + k) }
	for round := range 2 * n {
		slow := round % n
		alltoall := round%2 == 0
		for to := range n {
			for k := range m {
				src[to*m+k] = val(me, to, k, round)
			}
		}
		if alltoall {
			require.NoError(t, shmem.Alltoall(tm, dest, src, m))
		} else {
			// Every member's block is the one it would send PE 0.
			require.NoError(t, shmem.FCollect(tm, dest, src[:m]))
		}
		if me == slow {
			time.Sleep(5 * time.Millisecond)
		}
		for from := range n {
			for k := range m {
				want := val(from, me, k, round)
				if !alltoall {
					want = val(from, 0, k, round)
				}
				if got := dest[from*m+k]; got != want {
					t.Fatalf("round %d (PE %d lingering): element %d from PE %d is %d, want %d", round, slow, k, from, got, want)
				}
			}
		}
		clear(dest)
	}
	require.NoError(t, shmem.Free(w, dest))
}

// Every reduction over a type of each class, in place and not, at sizes
// from zero to many messages.
func caseReduce(t *T, w *shmem.World) {
	for _, count := range []int{0, 1, 13, 3000} {
		reduceBitwise[int8](t, w.TeamWorld(), count)
		reduceBitwise[uint32](t, w.TeamWorld(), count)
		reduceBitwise[int64](t, w.TeamWorld(), count)
		reduceBitwise[uint](t, w.TeamWorld(), count)
		// Powers of two, and zeros: a float32 product of 16 PEs' values
		// or more is exact only if no odd factor builds up past 24 bits
		// ((pe+1) x 1.5 was not, at 16 PEs).
		reduceArith(t, w.TeamWorld(), count, func(pe, i int) float32 { return float32(int(1)<<(pe%4)) * float32(i%3) / 2 })
		reduceArith(t, w.TeamWorld(), count, func(pe, i int) float64 { return float64(pe) - float64(i%9) })
		reduceSumProd(t, w.TeamWorld(), count, func(pe, i int) complex128 { return complex(float64(pe+1), float64(i%2)) })
	}
}

// Teams of odd sizes, including one PE: collectives on each, reusing
// the team back to back.
func caseCollOddTeams(t *T, w *shmem.World) {
	n := w.NPEs()
	for _, size := range []int{1, 3} {
		tm, err := w.TeamWorld().SplitStrided(n-1, -1, size, shmem.TeamConfig{})
		require.NoError(t, err)
		if tm != nil {
			for range 3 {
				reduceBitwise[int32](t, tm, 5)
				dest, src := make([]int, 1), []int{tm.MyPE()}
				require.NoError(t, shmem.SumReduce(tm, dest, src))
				require.Equal(t, size*(size-1)/2, dest[0])
				require.NoError(t, tm.Sync())
			}
			// The predefined teams and this one interleave freely.
			require.NoError(t, tm.Sync())
		}
		require.NoError(t, w.BarrierAll())
		require.NoError(t, tm.Destroy())
	}
}

func caseCollBadInput(t *T, w *shmem.World) {
	tm := w.TeamWorld()
	dest, err := shmem.Malloc[int](w, 4)
	require.NoError(t, err)
	require.ErrorIs(t, shmem.Broadcast(tm, dest, []int{1}, w.NPEs()), core.ErrInvalid, "root past the team")
	require.ErrorIs(t, shmem.Broadcast(tm, dest, []int{1}, -1), core.ErrInvalid, "negative root")
	require.ErrorIs(t, shmem.Broadcast(tm, make([]int, 4), []int{1}, 0), core.ErrOutOfBounds, "dest not symmetric")
	require.ErrorIs(t, shmem.FCollect(tm, dest, make([]int, 5)), core.ErrInvalid, "dest too short")
	require.ErrorIs(t, shmem.Alltoall(tm, dest, []int{1}, 1), core.ErrInvalid, "source too short")
	require.ErrorIs(t, shmem.Alltoalls(tm, dest, make([]int, 8), 1, 0, 1), core.ErrInvalid, "zero stride")
	require.ErrorIs(t, shmem.MaxReduce(tm, make([]int, 1), make([]int, 2)), core.ErrInvalid, "dest too short")
	var none *shmem.Team
	require.ErrorIs(t, none.Sync(), core.ErrInvalid, "nil team")
	require.NoError(t, shmem.Free(w, dest))
}

// reduceSumProd checks SumReduce out of place and ProdReduce in place
// against the same sums computed locally from everyone's values.
func reduceSumProd[V shmem.ArithElem](t *T, tm *shmem.Team, count int, val func(pe, i int) V) {
	n := tm.NPEs()
	src := make([]V, count)
	for i := range src {
		src[i] = val(tm.MyPE(), i)
	}
	sum := make([]V, count)
	require.NoError(t, shmem.SumReduce(tm, sum, src))
	require.NoError(t, shmem.ProdReduce(tm, src, src))
	for i := range count {
		ws, wp := val(0, i), val(0, i)
		for p := 1; p < n; p++ {
			ws += val(p, i)
			wp *= val(p, i)
		}
		// These values sum and multiply exactly in any order.
		if sum[i] != ws || src[i] != wp {
			t.Fatalf("%T reduction of %d on %d PEs: element %d: sum %v, product %v; want %v, %v", sum, count, n, i, sum[i], src[i], ws, wp)
		}
	}
}

func reduceArith[V shmem.OrderedElem](t *T, tm *shmem.Team, count int, val func(pe, i int) V) {
	reduceSumProd(t, tm, count, val)
	src := make([]V, count)
	for i := range src {
		src[i] = val(tm.MyPE(), i)
	}
	lo, hi := make([]V, count), slices.Clone(src)
	require.NoError(t, shmem.MinReduce(tm, lo, src))
	require.NoError(t, shmem.MaxReduce(tm, hi, hi))
	for i := range count {
		wl, wh := val(0, i), val(0, i)
		for p := 1; p < tm.NPEs(); p++ {
			wl, wh = min(wl, val(p, i)), max(wh, val(p, i))
		}
		if lo[i] != wl || hi[i] != wh {
			t.Fatalf("%T min/max of %d: element %d: %v, %v; want %v, %v", lo, count, i, lo[i], hi[i], wl, wh)
		}
	}
}

func reduceBitwise[V shmem.BitwiseElem](t *T, tm *shmem.Team, count int) {
	val := func(pe, i int) V { return V(1<<(pe%6) | (i*3)&0x70 | 1) }
	reduceArith(t, tm, count, val)
	src := make([]V, count)
	for i := range src {
		src[i] = val(tm.MyPE(), i)
	}
	and, or, xor := make([]V, count), make([]V, count), slices.Clone(src)
	require.NoError(t, shmem.AndReduce(tm, and, src))
	require.NoError(t, shmem.OrReduce(tm, or, src))
	require.NoError(t, shmem.XorReduce(tm, xor, xor))
	for i := range count {
		wa, wo, wx := val(0, i), val(0, i), val(0, i)
		for p := 1; p < tm.NPEs(); p++ {
			wa, wo, wx = wa&val(p, i), wo|val(p, i), wx^val(p, i)
		}
		if and[i] != wa || or[i] != wo || xor[i] != wx {
			t.Fatalf("%T reduction of %d: element %d: and %v or %v xor %v; want %v %v %v", and, count, i, and[i], or[i], xor[i], wa, wo, wx)
		}
	}
}

// OpenSHMEM 1.6 makes plain when a collective's source must be ready: on
// each PE, when that PE calls the routine, and no sooner; and once the
// routine returns there, the PE may use its source again. Round after
// round, with nothing between the collectives, each PE writes its one
// source array and calls broadcast, fcollect, alltoall and sum_reduce: a
// PE that read a peer's source before the peer had called would see the
// write before, and one that read it after the peer had returned would
// see the next. Each routine has a dest of its own: a PE still reading
// one routine's dest while a faster peer has moved on to the next
// routine is no conflict.
func caseCollSourceReadyAtCall(t *T, w *shmem.World) {
	team := w.TeamWorld()
	me, n := w.MyPE(), w.NPEs()
	const k = 4
	alloc := func() []int64 {
		b, err := shmem.Malloc[int64](w, k*n)
		require.NoError(t, err)
		return b
	}
	src, bdst, fdst, adst, rdst := alloc(), alloc(), alloc(), alloc(), alloc()
	val := func(pe, round, i int) int64 { return int64(round*100000 + pe*100 + i) }
	for round := 1; round <= 20; round++ {
		for i := range src {
			src[i] = val(me, round, i)
		}
		require.NoError(t, shmem.Broadcast(team, bdst[:k], src[:k], round%n))
		for i := range k {
			require.Equal(t, val(round%n, round, i), bdst[i], "round %d: broadcast element %d", round, i)
		}
		for i := range src {
			src[i] = val(me, round, i) + 1
		}
		require.NoError(t, shmem.FCollect(team, fdst, src[:k]))
		for pe := range n {
			for i := range k {
				require.Equal(t, val(pe, round, i)+1, fdst[pe*k+i], "round %d: fcollect element %d of PE %d", round, i, pe)
			}
		}
		for i := range src {
			src[i] = val(me, round, i) + 2
		}
		require.NoError(t, shmem.Alltoall(team, adst, src, k))
		for pe := range n {
			for i := range k {
				require.Equal(t, val(pe, round, me*k+i)+2, adst[pe*k+i], "round %d: alltoall element %d from PE %d", round, i, pe)
			}
		}
		for i := range src {
			src[i] = int64(round + me)
		}
		require.NoError(t, shmem.SumReduce(team, rdst[:k], src[:k]))
		want := int64(n*round + n*(n-1)/2)
		for i := range k {
			require.Equal(t, want, rdst[i], "round %d: sum_reduce element %d", round, i)
		}
	}
	require.NoError(t, w.BarrierAll())
}
