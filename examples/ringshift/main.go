// Command ringshift shifts a buffer around the ring of PEs: in every round
// each PE puts a block to its right neighbour and verifies the block its
// left neighbour put, which must carry that neighbour's number and the
// round. PE 0 prints one verification line.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/goshmem/goshmem/shmem"

	_ "github.com/goshmem/goshmem/providers/all"
)

func main() {
	rounds := flag.Int("rounds", 10, "number of shifts")
	elems := flag.Int("elems", 1024, "int64 elements per block")
	flag.Parse()
	if *rounds < 1 || *elems < 1 {
		fmt.Fprintln(os.Stderr, "ringshift: -rounds and -elems must be at least 1")
		os.Exit(2)
	}
	if err := run(*rounds, *elems); err != nil {
		fmt.Fprintln(os.Stderr, "ringshift:", err)
		os.Exit(1)
	}
}

// word is what PE pe puts at index i in round r: distinct for every PE,
// round and position, so a stale, misplaced or foreign word shows.
func word(pe, r, i int) int64 { return int64(pe)<<48 | int64(r)<<20 | int64(i) }

func run(rounds, elems int) error {
	w, err := shmem.Init()
	if err != nil {
		return err
	}
	defer w.Finalize()
	me, n := w.MyPE(), w.NPEs()
	left, right := (me+n-1)%n, (me+1)%n
	// Two blocks, used by round parity: a neighbour may put round r+1
	// while this PE still reads round r, so one barrier a round suffices.
	blocks, err := shmem.Malloc[int64](w, 2*elems)
	if err != nil {
		return err
	}
	src := make([]int64, elems)
	start := time.Now()
	for r := 0; r < rounds; r++ {
		for i := range src {
			src[i] = word(me, r, i)
		}
		dst := blocks[(r%2)*elems : (r%2+1)*elems]
		if err := shmem.Put(w, dst, src, right); err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		if err := w.BarrierAll(); err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		for i, v := range dst {
			if want := word(left, r, i); v != want {
				return fmt.Errorf("PE %d round %d: element %d is %#x, want %#x from PE %d", me, r, i, v, want, left)
			}
		}
	}
	elapsed := time.Since(start)
	if err := w.BarrierAll(); err != nil {
		return err
	}
	if me == 0 {
		fmt.Printf("ringshift: %d PEs, %d rounds of %d bytes over %s: verified (%.2f us/round)\n",
			n, rounds, elems*8, w.Provider(), float64(elapsed.Microseconds())/float64(rounds))
	}
	return w.Finalize()
}
