// Command isort sorts integer keys spread over the PEs by bucket sort, as
// the NAS IS benchmark does: each PE draws random keys, sends every key to
// the PE whose range holds it and sorts what it receives, so that the PEs'
// keys, read in PE order, are sorted. The key exchange fetches each
// target's offset through one context while the keys go out through
// another, whose non-blocking puts need not complete until its own quiet.
// PE 0 prints one verification line.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/goshmem/goshmem/shmem"

	_ "github.com/goshmem/goshmem/providers/all"
)

// maxKeyLimit keeps key*NPEs within an int64 for any job of up to 2^23 PEs.
const maxKeyLimit = 1 << 40

func main() {
	perPE := flag.Int("keys", 1<<16, "keys each PE draws")
	maxKey := flag.Int64("max", 1<<20, "keys are drawn from 0 to max-1")
	flag.Parse()
	if *perPE < 1 || *maxKey < 1 || *maxKey > maxKeyLimit {
		fmt.Fprintf(os.Stderr, "isort: -keys must be at least 1 and -max from 1 to %d\n", int64(maxKeyLimit))
		os.Exit(2)
	}
	if err := run(*perPE, *maxKey); err != nil {
		fmt.Fprintln(os.Stderr, "isort:", err)
		os.Exit(1)
	}
}

func run(perPE int, maxKey int64) error {
	w, err := shmem.Init()
	if err != nil {
		return err
	}
	defer w.Finalize()
	getCtx, err := w.NewContext(shmem.ContextOptions{Private: true, NoStore: true})
	if err != nil {
		return err
	}
	defer getCtx.Destroy()
	keys := draw(w.MyPE(), perPE, maxKey)
	start := time.Now()
	recv, held, err := sortKeys(w, getCtx, keys, maxKey)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	heldBy, count, checksum, err := verify(w, getCtx, keys, recv[:held])
	if err != nil {
		return err
	}
	if w.MyPE() == 0 {
		fmt.Printf("isort: %d PEs, %d keys below %d over %s: sorted and verified, checksum %d, keys per PE %s (%.1f ms)\n",
			w.NPEs(), count, maxKey, w.Provider(), checksum, join(heldBy), float64(elapsed.Microseconds())/1000)
	}
	return w.Finalize()
}

// sortKeys sends every key to the PE whose range holds it and sorts the
// keys this PE receives. They are the first held elements of recv, which
// is symmetric.
func sortKeys(w *shmem.World, getCtx *shmem.Context, keys []int64, maxKey int64) (recv []int64, held int64, err error) {
	n, world := w.NPEs(), w.TeamWorld()
	sendBuf, sendCount := byBucket(keys, n, maxKey)
	recvCount, err := shmem.Malloc[int64](w, n) // recvCount[i]: keys PE i sends here
	if err != nil {
		return nil, 0, err
	}
	if err := shmem.Alltoall(world, recvCount, sendCount, 1); err != nil {
		return nil, 0, err
	}
	recvOffset, err := shmem.Malloc[int64](w, n) // recvOffset[i]: where PE i's keys land here
	if err != nil {
		return nil, 0, err
	}
	held = prefix(recvOffset, recvCount)
	// The receive buffer is symmetric, so every PE allocates the largest.
	most := []int64{held}
	if err := shmem.MaxReduce(world, most, most); err != nil {
		return nil, 0, err
	}
	recv, err = shmem.Malloc[int64](w, int(most[0]))
	if err != nil {
		return nil, 0, err
	}
	if err := exchange(w, getCtx, recv, recvOffset, sendBuf, sendCount); err != nil {
		return nil, 0, err
	}
	slices.Sort(recv[:held])
	return recv, held, nil
}

// verify checks, on every PE, that the PEs hold as many keys as they drew,
// with the same sum, each PE its keys in order and none above the next
// PE's first. It returns how many keys each PE holds, their count and sum.
func verify(w *shmem.World, getCtx *shmem.Context, keys, mine []int64) (heldBy []int64, count, checksum int64, err error) {
	world := w.TeamWorld()
	// FCollect returns once every PE has contributed, so every PE has
	// sorted its keys by then.
	heldBy, err = shmem.Malloc[int64](w, w.NPEs())
	if err != nil {
		return nil, 0, 0, err
	}
	if err := shmem.FCollect(world, heldBy, []int64{int64(len(mine))}); err != nil {
		return nil, 0, 0, err
	}
	local := checkOrder(getCtx, mine, heldBy, w.MyPE())
	bad := int64(0)
	if local != nil {
		bad = 1
	}
	// Drawn and held keys: their counts and sums, and the PEs that found
	// their keys out of order.
	sums := []int64{int64(len(keys)), sum(keys), int64(len(mine)), sum(mine), bad}
	if err := shmem.SumReduce(world, sums, sums); err != nil {
		return nil, 0, 0, err
	}
	switch {
	case local != nil:
		return nil, 0, 0, local
	case sums[4] != 0:
		return nil, 0, 0, fmt.Errorf("%d PEs hold keys out of order", sums[4])
	case sums[0] != sums[2] || sums[1] != sums[3]:
		return nil, 0, 0, fmt.Errorf("the PEs drew %d keys summing to %d but hold %d summing to %d", sums[0], sums[1], sums[2], sums[3])
	}
	return heldBy, sums[2], sums[3], nil
}

// exchange sends each PE its bucket, the sendCount[i] keys of sendBuf from
// sendBuf's prefix sum on, to where that PE expects them: the offset it
// holds for this PE, fetched through getCtx. The keys go out through a
// context of their own, so the gets need not wait for them; its quiet and
// a barrier complete the puts everywhere.
func exchange(w *shmem.World, getCtx *shmem.Context, recv, recvOffset, sendBuf, sendCount []int64) error {
	putCtx, err := w.NewContext(shmem.ContextOptions{Private: true})
	if err != nil {
		return err
	}
	defer putCtx.Destroy()
	// Every PE's recvOffset is set once every PE is here.
	if err := w.BarrierAll(); err != nil {
		return err
	}
	me, n := w.MyPE(), w.NPEs()
	sendOffset := make([]int64, n)
	prefix(sendOffset, sendCount)
	// Start to the right of this PE, so the PEs do not all send to the
	// same one at once.
	for j := 1; j <= n; j++ {
		pe := (me + j) % n
		at, err := shmem.G(getCtx, &recvOffset[me], pe)
		if err != nil {
			return err
		}
		from, count := sendOffset[pe], sendCount[pe]
		if err := shmem.PutNBI(putCtx, recv[at:at+count], sendBuf[from:from+count], pe); err != nil {
			return err
		}
	}
	if err := putCtx.Quiet(); err != nil {
		return err
	}
	return w.BarrierAll()
}
