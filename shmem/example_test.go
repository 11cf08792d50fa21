package shmem_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"

	_ "github.com/goshmem/goshmem/providers/loopback"
)

// The examples are SPMD programs, as oshrun runs them: every PE runs the
// same code, and only PE 0 prints, so the output is the same on every run.
// Here the PEs are goroutines of one process over the loopback provider;
// launched by oshrun, a program calls shmem.Init() without options.

// launch runs a job of n PEs as goroutines and returns when every PE has
// returned. Each PE calls pe with the options that join it to the job. A
// PE that fails is taken out of the job, so that the others see it lost
// instead of waiting for it; the errors are printed, in PE order, at the
// end.
func launch(n int, pe func(opts ...shmem.Option) error) {
	dir, err := os.MkdirTemp("", "shmem-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	env := map[string]string{core.EnvShmDir: dir, core.EnvProvider: "loopback"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	id := "shmem-example-" + rand.Text()[:12]

	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, b := range bootstrap.NewLocal(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = pe(shmem.WithBootstrap(b, id), shmem.WithEnv(lookup), shmem.WithHeapSize(1<<20))
			if errs[r] != nil {
				b.Kill()
			}
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			fmt.Printf("PE %d: %v\n", r, err)
		}
	}
}

// run runs main on each of n PEs between Init and Finalize.
func run(n int, main func(w *shmem.World) error) {
	launch(n, func(opts ...shmem.Option) error {
		w, err := shmem.Init(opts...)
		if err != nil {
			return err
		}
		if err := main(w); err != nil {
			return err
		}
		return w.Finalize()
	})
}

// A program joins the job with Init, learns its PE number and the job's
// size, and leaves with Finalize, which every PE calls.
func ExampleInit() {
	launch(4, func(opts ...shmem.Option) error {
		w, err := shmem.Init(opts...) // in a program oshrun started: shmem.Init()
		if err != nil {
			return err
		}
		if w.MyPE() == 0 {
			fmt.Printf("PE %d of %d, over %s\n", w.MyPE(), w.NPEs(), w.Provider())
		}
		return w.Finalize()
	})
	// Output:
	// PE 0 of 4, over loopback
}

// Malloc is collective: every PE allocates the same number of elements and
// gets its own part of one symmetric object, which other PEs address by
// the same slice. The memory starts zeroed.
func ExampleMalloc() {
	run(4, func(w *shmem.World) error {
		counts, err := shmem.Malloc[int64](w, w.NPEs())
		if err != nil {
			return err
		}
		// Every PE stores into slot me of PE 0's counts.
		if err := shmem.P(w, &counts[w.MyPE()], int64(10*w.MyPE()), 0); err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if w.MyPE() == 0 {
			fmt.Println(counts)
		}
		return shmem.Free(w, counts)
	})
	// Output:
	// [0 10 20 30]
}

// Each PE puts a message into its right neighbour's symmetric buffer; the
// barrier completes the puts before anyone reads.
func ExamplePut() {
	run(4, func(w *shmem.World) error {
		me, n := w.MyPE(), w.NPEs()
		inbox, err := shmem.Malloc[int32](w, 2)
		if err != nil {
			return err
		}
		if err := shmem.Put(w, inbox, []int32{int32(me), int32(me * me)}, (me+1)%n); err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if me == 0 {
			fmt.Println("PE 0 got", inbox, "from PE", inbox[0])
		}
		return nil
	})
	// Output:
	// PE 0 got [3 9] from PE 3
}

// Get reads another PE's symmetric data without that PE taking part: PE 0
// collects what every PE wrote into its own part of a symmetric object.
func ExampleGet() {
	run(3, func(w *shmem.World) error {
		me := w.MyPE()
		local, err := shmem.Malloc[float64](w, 2)
		if err != nil {
			return err
		}
		local[0], local[1] = float64(me), float64(me)/2
		if err := w.BarrierAll(); err != nil { // every PE has written its part
			return err
		}
		if me == 0 {
			got := make([]float64, 2)
			for pe := range w.NPEs() {
				if err := shmem.Get(w, got, local, pe); err != nil {
					return err
				}
				fmt.Printf("PE %d holds %v\n", pe, got)
			}
		}
		return w.BarrierAll() // PE 0 is done reading before anyone leaves
	})
	// Output:
	// PE 0 holds [0 0]
	// PE 1 holds [1 0.5]
	// PE 2 holds [2 1]
}

// Atomics update a symmetric word on any PE without a lock: every PE takes
// a ticket from a counter on PE 0, and no two PEs get the same one.
func ExampleAtomicFetchAdd() {
	run(4, func(w *shmem.World) error {
		counter, err := shmem.Malloc[int64](w, 1)
		if err != nil {
			return err
		}
		tickets, err := shmem.Malloc[int64](w, w.NPEs())
		if err != nil {
			return err
		}
		ticket, err := shmem.AtomicFetchAdd(w, &counter[0], 1, 0)
		if err != nil {
			return err
		}
		// Mark the ticket taken, in PE 0's table.
		if err := shmem.AtomicAdd(w, &tickets[ticket], 1, 0); err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if w.MyPE() == 0 {
			fmt.Println("counter:", counter[0], "tickets taken:", tickets)
		}
		return nil
	})
	// Output:
	// counter: 4 tickets taken: [1 1 1 1]
}

// WaitUntil waits for a store by another PE: PE 1 puts the data, orders it
// before the flag with Fence, then sets the flag PE 0 waits on.
func ExampleWaitUntil() {
	run(2, func(w *shmem.World) error {
		data, err := shmem.Malloc[byte](w, 5)
		if err != nil {
			return err
		}
		flag, err := shmem.Malloc[int64](w, 1)
		if err != nil {
			return err
		}
		switch w.MyPE() {
		case 1:
			if err := shmem.Put(w, data, []byte("hello"), 0); err != nil {
				return err
			}
			if err := w.Fence(); err != nil { // the data lands before the flag
				return err
			}
			if err := shmem.AtomicSet(w, &flag[0], 1, 0); err != nil {
				return err
			}
		case 0:
			if err := shmem.WaitUntil(w, &flag[0], shmem.CmpEQ, 1); err != nil {
				return err
			}
			fmt.Printf("PE 0 got %q\n", data)
		}
		return w.BarrierAll()
	})
	// Output:
	// PE 0 got "hello"
}

// BarrierAll completes every PE's puts and waits for every PE, so that
// after it each PE may read what the others wrote.
func ExampleWorld_BarrierAll() {
	run(4, func(w *shmem.World) error {
		me, n := w.MyPE(), w.NPEs()
		seen, err := shmem.Malloc[int16](w, n)
		if err != nil {
			return err
		}
		// Tell every PE that this one was here.
		for pe := range n {
			if err := shmem.P(w, &seen[me], int16(me+1), pe); err != nil {
				return err
			}
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if me == 0 {
			fmt.Println("PE 0 saw", seen)
		}
		return nil
	})
	// Output:
	// PE 0 saw [1 2 3 4]
}

// A reduction over a team gives every member the element-wise result: here
// the sum of the PE numbers, and the number of PEs.
func ExampleSumReduce() {
	run(4, func(w *shmem.World) error {
		src, err := shmem.Malloc[int64](w, 2)
		if err != nil {
			return err
		}
		dst, err := shmem.Malloc[int64](w, 2)
		if err != nil {
			return err
		}
		src[0], src[1] = int64(w.MyPE()), 1
		if err := shmem.SumReduce(w.TeamWorld(), dst, src); err != nil {
			return err
		}
		if w.MyPE() == 0 {
			fmt.Println("sum of PE numbers:", dst[0], "PEs:", dst[1])
		}
		return nil
	})
	// Output:
	// sum of PE numbers: 6 PEs: 4
}

// Splitting a team gives a subset of the PEs its own ranks and its own
// collectives: the even PEs of six form a team of three, and a sum over it
// counts only them.
func ExampleTeam_SplitStrided() {
	run(6, func(w *shmem.World) error {
		src, err := shmem.Malloc[int32](w, 1)
		if err != nil {
			return err
		}
		dst, err := shmem.Malloc[int32](w, 1)
		if err != nil {
			return err
		}
		src[0] = int32(w.MyPE())
		// Every PE of the parent team calls the split; odd PEs get nil.
		even, err := w.TeamWorld().SplitStrided(0, 2, w.NPEs()/2, shmem.TeamConfig{})
		if err != nil {
			return err
		}
		if even == nil {
			return nil
		}
		if err := shmem.SumReduce(even, dst, src); err != nil {
			return err
		}
		if even.MyPE() == 0 {
			fmt.Printf("team of %d, rank 2 is PE %d, sum of its PE numbers %d\n",
				even.NPEs(), even.Member(2), dst[0])
		}
		return even.Destroy()
	})
	// Output:
	// team of 3, rank 2 is PE 4, sum of its PE numbers 6
}

// A context is a stream of operations of its own: its Quiet completes its
// puts and nothing else, so independent streams do not wait for each other.
func ExampleWorld_NewContext() {
	run(2, func(w *shmem.World) error {
		me, n := w.MyPE(), w.NPEs()
		box, err := shmem.Malloc[uint64](w, 1)
		if err != nil {
			return err
		}
		ctx, err := w.NewContext(shmem.ContextOptions{Private: true})
		if err != nil {
			return err
		}
		if err := shmem.P(ctx, &box[0], uint64(100+me), (me+1)%n); err != nil {
			return errors.Join(err, ctx.Destroy())
		}
		// BarrierAll completes the default context only: quiet ctx first.
		if err := ctx.Quiet(); err != nil {
			return errors.Join(err, ctx.Destroy())
		}
		if err := ctx.Destroy(); err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		if me == 0 {
			fmt.Println("PE 0 got", box[0])
		}
		return nil
	})
	// Output:
	// PE 0 got 101
}
