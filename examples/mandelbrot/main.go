// Command mandelbrot computes an image of the Mandelbrot set on every PE
// at once. Each PE runs several goroutines, each with a private context of
// its own, so one goroutine's quiet never waits for another's puts. Work
// is handed out in blocks of rows by a fetch-add on a counter on PE 0, so
// a PE with faster or less loaded cores takes more blocks; each block's
// rows go straight into PE 0's image. PE 0 then checks the image against
// one it computes alone and prints one verification line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/goshmem/goshmem/shmem"

	_ "github.com/goshmem/goshmem/providers/all"
)

func main() {
	var s scene
	flag.IntVar(&s.width, "width", 640, "image width in pixels")
	flag.IntVar(&s.height, "height", 480, "image height in pixels")
	flag.IntVar(&s.iters, "iters", 256, "iterations before a point counts as in the set")
	workers := flag.Int("workers", 2, "goroutines per PE")
	block := flag.Int("block", 4, "rows handed out per fetch-add")
	out := flag.String("out", "", "file PE 0 writes the image to: NAME.pgm or NAME.png")
	flag.Parse()
	if s.width < 1 || s.height < 1 || s.iters < 1 || *workers < 1 || *block < 1 {
		fmt.Fprintln(os.Stderr, "mandelbrot: -width, -height, -iters, -workers and -block must be at least 1")
		os.Exit(2)
	}
	if *out != "" && !strings.HasSuffix(*out, ".pgm") && !strings.HasSuffix(*out, ".png") {
		fmt.Fprintf(os.Stderr, "mandelbrot: -out %q: the name must end in .pgm or .png\n", *out)
		os.Exit(2)
	}
	if err := run(s, *workers, *block, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mandelbrot:", err)
		os.Exit(1)
	}
}

func run(s scene, workers, block int, out string) error {
	w, err := shmem.Init(shmem.WithThreadLevel(shmem.ThreadMultiple))
	if err != nil {
		return err
	}
	defer w.Finalize()
	me, n := w.MyPE(), w.NPEs()
	img, err := shmem.Malloc[uint8](w, s.width*s.height) // filled on PE 0 only
	if err != nil {
		return err
	}
	next, err := shmem.Malloc[int64](w, 1) // on PE 0: the first row not yet handed out
	if err != nil {
		return err
	}
	rowsBy, err := shmem.Malloc[int64](w, n) // on PE 0: rows each PE computed
	if err != nil {
		return err
	}

	start := time.Now()
	rows := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() { rows[g], errs[g] = work(w, s, img, &next[0], block) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	total := 0
	for _, r := range rows {
		total += r
	}
	if err := shmem.P(w, &rowsBy[me], int64(total), 0); err != nil {
		return err
	}
	if err := w.BarrierAll(); err != nil {
		return err
	}
	elapsed := time.Since(start)

	if me == 0 {
		if err := verify(s, img, rowsBy); err != nil {
			return err
		}
		if out != "" {
			if err := s.write(out, img); err != nil {
				return err
			}
		}
		fmt.Printf("mandelbrot: %d PEs x %d workers, %dx%d, %d iterations over %s: verified, checksum %#016x, rows per PE %s (%.1f ms)\n",
			n, workers, s.width, s.height, s.iters, w.Provider(), checksum(img), join(rowsBy), float64(elapsed.Microseconds())/1000)
	}
	return w.Finalize()
}

// work is one goroutine: it takes blocks of rows from the counter on PE 0
// until none are left, computes them and puts them into PE 0's image, all
// through a private context of its own. It returns how many rows it did.
func work(w *shmem.World, s scene, img []uint8, next *int64, block int) (rows int, err error) {
	ctx, err := w.NewContext(shmem.ContextOptions{Private: true})
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, ctx.Destroy()) }()
	buf := make([]uint8, block*s.width)
	for {
		y0, err := shmem.AtomicFetchAdd(ctx, next, int64(block), 0)
		if err != nil {
			return rows, err
		}
		if y0 >= int64(s.height) {
			break
		}
		y1 := min(int(y0)+block, s.height)
		// The previous block's put may still be reading buf: complete it.
		// This waits for this goroutine's operations only.
		if err := ctx.Quiet(); err != nil {
			return rows, err
		}
		part := buf[:(y1-int(y0))*s.width]
		s.rows(part, int(y0), y1)
		if err := shmem.PutNBI(ctx, img[int(y0)*s.width:y1*s.width], part, 0); err != nil {
			return rows, err
		}
		rows += y1 - int(y0)
	}
	return rows, ctx.Quiet()
}

// verify checks that every row was computed once and that img is the
// image computed on one PE alone.
func verify(s scene, img []uint8, rowsBy []int64) error {
	var total int64
	for _, r := range rowsBy {
		total += r
	}
	if total != int64(s.height) {
		return fmt.Errorf("the PEs computed %d rows (%s), the image has %d", total, join(rowsBy), s.height)
	}
	want := make([]uint8, len(img))
	s.rows(want, 0, s.height)
	for i := range want {
		if img[i] != want[i] {
			return fmt.Errorf("pixel (%d, %d) is %d, want %d", i%s.width, i/s.width, img[i], want[i])
		}
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
