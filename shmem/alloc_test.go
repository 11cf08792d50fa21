package shmem

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAllocatorFirstFitAndCoalesce(t *testing.T) {
	var a allocator
	a.init(1024, 1024+4096)
	x, ok := a.alloc(100, 0)
	require.True(t, ok)
	require.Equal(t, 1024, x)
	y, ok := a.alloc(64, 0)
	require.True(t, ok)
	require.Equal(t, 1024+128, y, "sizes round up to the cache line")
	z, ok := a.alloc(1, 1024)
	require.True(t, ok)
	require.Equal(t, 2048, z, "alignment honoured")
	require.True(t, a.release(y))
	require.False(t, a.release(y), "double free is refused")
	require.True(t, a.release(x))
	require.Equal(t, []span{{1024, 1024}, {2048 + 64, 4096 - 1024 - 64}}, a.free, "left part coalesced")
	require.True(t, a.release(z))
	require.Equal(t, []span{{1024, 4096}}, a.free, "everything coalesced")
	_, ok = a.alloc(4097, 0)
	require.False(t, ok)
	w, ok := a.alloc(4096, 0)
	require.True(t, ok)
	require.Equal(t, 1024, w)
	free, largest := a.stats()
	require.Zero(t, free)
	require.Zero(t, largest)
}

// Two allocators fed the same random sequence agree on every offset (the
// heap's symmetry), and the free list always covers exactly what is not
// allocated.
func TestAllocatorDeterministicRandom(t *testing.T) {
	var a, b allocator
	a.init(64, 64+1<<20)
	b.init(64, 64+1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	var live []int
	for i := 0; i < 5000; i++ {
		if len(live) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(live))
			require.True(t, a.release(live[k]))
			require.True(t, b.release(live[k]))
			live = append(live[:k], live[k+1:]...)
			continue
		}
		size, align := rng.IntN(20000), 1<<rng.IntN(13)
		x, okx := a.alloc(size, align)
		y, oky := b.alloc(size, align)
		require.Equal(t, okx, oky)
		require.Equal(t, x, y)
		if okx {
			require.Zero(t, x%max(align, minAlign))
			live = append(live, x)
		}
		used := 0
		for _, s := range a.used {
			used += s
		}
		free, _ := a.stats()
		require.Equal(t, 1<<20, used+free)
		for j := 1; j < len(a.free); j++ {
			prev := a.free[j-1]
			require.Less(t, prev.off+prev.size, a.free[j].off, "free list sorted and coalesced")
		}
	}
}

// The allocator's record of committed granules: the runs a block needs
// that are not committed yet, and none once they are.
func TestAllocatorCommittedGranules(t *testing.T) {
	const g = commitGranule
	var a allocator
	a.init(g/2, 10*g)
	lo, hi := a.uncommitted(g/2, 64, 0)
	require.Equal(t, [2]int{0, 1}, [2]int{lo, hi}, "a word in granule 0")
	a.markCommitted(lo, hi)
	lo, hi = a.uncommitted(g/2, 64, 0)
	require.Equal(t, lo, hi, "committed already")

	a.markCommitted(3, 4)
	lo, hi = a.uncommitted(g-8, 4*g, 0)
	require.Equal(t, [2]int{1, 3}, [2]int{lo, hi}, "granules 1 and 2 of 0 to 4")
	lo, hi = a.uncommitted(g-8, 4*g, 3)
	require.Equal(t, [2]int{4, 5}, [2]int{lo, hi}, "after 3, granule 4")
	lo, hi = a.uncommitted(g-8, 4*g, 5)
	require.Equal(t, lo, hi, "nothing past the block")

	a.markCommitted(9, 10)
	lo, hi = a.uncommitted(10*g-64, 64, 0)
	require.Equal(t, lo, hi, "the last granule")
}
