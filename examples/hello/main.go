// Command hello is the smallest OpenSHMEM program: every PE says hello and
// tells its right neighbour its number, and checks what its left neighbour
// told it.
package main

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/shmem"

	_ "github.com/goshmem/goshmem/providers/all"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run() error {
	w, err := shmem.Init()
	if err != nil {
		return err
	}
	defer w.Finalize()
	me, n := w.MyPE(), w.NPEs()
	from, err := shmem.Malloc[int64](w, 1)
	if err != nil {
		return err
	}
	if err := shmem.P(w, &from[0], int64(me), (me+1)%n); err != nil {
		return err
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	if want := int64((me + n - 1) % n); from[0] != want {
		return fmt.Errorf("PE %d: left neighbour said %d, want %d", me, from[0], want)
	}
	fmt.Printf("Hello from PE %d of %d over %s; my left neighbour is PE %d\n", me, n, w.Provider(), from[0])
	return w.Finalize()
}
