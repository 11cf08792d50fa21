package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/goshmem/goshmem/shmem"
)

// draw returns PE pe's n keys, uniform below maxKey; a PE draws the same
// keys in every run.
func draw(pe, n int, maxKey int64) []int64 {
	r := rand.New(rand.NewPCG(0x15041504, uint64(pe)))
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = r.Int64N(maxKey)
	}
	return keys
}

// byBucket returns keys grouped by the PE whose range holds them (PE i
// gets the keys from i*maxKey/npes on) and how many keys each PE gets.
func byBucket(keys []int64, npes int, maxKey int64) (grouped, count []int64) {
	bucket := func(k int64) int64 { return k * int64(npes) / maxKey }
	count = make([]int64, npes)
	for _, k := range keys {
		count[bucket(k)]++
	}
	next := make([]int64, npes)
	prefix(next, count)
	grouped = make([]int64, len(keys))
	for _, k := range keys {
		b := bucket(k)
		grouped[next[b]] = k
		next[b]++
	}
	return grouped, count
}

// prefix sets offset[i] to the sum of count[:i] and returns the sum of all.
func prefix(offset, count []int64) int64 {
	var total int64
	for i, c := range count {
		offset[i] = total
		total += c
	}
	return total
}

func sum(keys []int64) int64 {
	var s int64
	for _, k := range keys {
		s += k
	}
	return s
}

// checkOrder checks that mine, this PE's keys at the start of a symmetric
// buffer, are sorted and that none is above the first key of the next PE
// that holds any. heldBy holds how many keys each PE holds.
func checkOrder(getCtx *shmem.Context, mine, heldBy []int64, me int) error {
	if !slices.IsSorted(mine) {
		return fmt.Errorf("PE %d: keys out of order", me)
	}
	if len(mine) == 0 {
		return nil
	}
	for pe := me + 1; pe < len(heldBy); pe++ {
		if heldBy[pe] == 0 {
			continue
		}
		first, err := shmem.G(getCtx, &mine[0], pe)
		if err != nil {
			return err
		}
		if last := mine[len(mine)-1]; last > first {
			return fmt.Errorf("PE %d: last key %d is above PE %d's first key %d", me, last, pe, first)
		}
		return nil
	}
	return nil
}

// join formats counts as "a/b/c".
func join(counts []int64) string {
	s := make([]string, len(counts))
	for i, c := range counts {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, "/")
}
