package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/goshmem/goshmem/internal/version"
	"github.com/goshmem/goshmem/shmem"

	_ "github.com/goshmem/goshmem/providers/all"
)

// options are the command line.
type options struct {
	tests              []test
	sizes              []int
	iters, warmup, win int
	json               bool
	plot               string
	from               []string
	compare            []string // the peer's and our JSON lines files
	targets            []target
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmemperf:", err)
		os.Exit(2)
	}
	switch {
	case len(o.compare) > 0:
		err = compareFiles(os.Stdout, o.compare[0], o.compare[1], o.targets)
	case len(o.from) > 0:
		err = plotFiles(o.plot, o.from)
	default:
		err = runJob(o, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmemperf:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, out io.Writer) (*options, error) {
	fs := flag.NewFlagSet("shmemperf", flag.ContinueOnError)
	fs.SetOutput(out)
	testSpec := fs.String("test", "all", "tests to run: all, or names separated by commas; list prints them")
	sizeSpec := fs.String("sizes", "8:4M", "message sizes: LO:HI for the powers of two between them, or a list like 8,64,1K")
	iters := fs.Int("iters", 100000, "timed iterations per size (fewer for large sizes, so each moves at most 512 MiB)")
	warmup := fs.Int("warmup", 1000, "untimed iterations before them")
	window := fs.Int("window", 64, "operations per quiet in the bandwidth and rate tests")
	jsonOut := fs.Bool("json", false, "one JSON object per result line instead of a table")
	plotFile := fs.String("plot", "", "also draw latency and bandwidth against size into this .svg or .png file")
	from := fs.String("from", "", "with -plot: draw these JSON lines files (comma separated) instead of running tests")
	compare := fs.String("compare", "", "PEER.jsonl,OURS.jsonl: print both medians per test, size and PEs, and their ratio, instead of running tests")
	showVer := fs.Bool("version", false, "print goshmem's version and exit")
	targets := fs.String("targets", "", "with -compare: ratio targets, TEST[:SIZE][@NPES]=RATIO separated by commas (latency at most, bandwidth and rate at least)")
	fs.Usage = func() {
		fmt.Fprint(out, "usage: oshrun -np N shmemperf [flags]\n       shmemperf -plot FILE -from A.jsonl,B.jsonl\n       shmemperf -compare PEER.jsonl,OURS.jsonl [-targets T]\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *showVer {
		fmt.Fprintln(out, version.Line("shmemperf"))
		return nil, flag.ErrHelp // done, as after -h
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; every setting is a flag", fs.Arg(0))
	}
	if *testSpec == "list" {
		for _, t := range registry {
			note := t.metric.unit()
			if t.unavailable != "" {
				note = "unavailable: " + t.unavailable
			}
			fmt.Fprintf(out, "%-18s %s (%s)\n", t.name, t.doc, note)
		}
		return nil, flag.ErrHelp
	}
	o := &options{iters: *iters, warmup: *warmup, win: *window, json: *jsonOut, plot: *plotFile}
	var err error
	if o.tests, err = selectTests(*testSpec); err != nil {
		return nil, err
	}
	if o.sizes, err = parseSizes(*sizeSpec); err != nil {
		return nil, err
	}
	switch {
	case o.iters < 1 || o.warmup < 0 || o.win < 1:
		return nil, fmt.Errorf("-iters %d, -warmup %d, -window %d: -iters and -window must be at least 1, -warmup at least 0", o.iters, o.warmup, o.win)
	case o.plot != "" && !slices.Contains([]string{".svg", ".png"}, plotExt(o.plot)):
		return nil, fmt.Errorf("-plot %q: the file name must end in .svg or .png", o.plot)
	case *from != "" && o.plot == "":
		return nil, errors.New("-from names files to plot: give -plot FILE too")
	case *targets != "" && *compare == "":
		return nil, errors.New("-targets applies to -compare: give -compare PEER.jsonl,OURS.jsonl too")
	}
	if *compare != "" {
		if o.compare = strings.Split(*compare, ","); len(o.compare) != 2 {
			return nil, fmt.Errorf("-compare %q: give two files, the peer's and ours, separated by a comma", *compare)
		}
	}
	if o.targets, err = parseTargets(*targets); err != nil {
		return nil, err
	}
	if *from != "" {
		o.from = strings.Split(*from, ",")
	}
	return o, nil
}

// runJob joins the job, runs the tests and, on PE 0, prints and plots.
// One goroutine calls into the World, as in C after shmem_init, and the
// World may use that.
func runJob(o *options, out io.Writer) error {
	w, err := shmem.Init(shmem.WithThreadLevel(shmem.ThreadSingle))
	if err != nil {
		return err
	}
	defer w.Finalize()
	results, err := run(w, o, out)
	if err != nil {
		return err
	}
	if w.MyPE() == 0 && o.plot != "" {
		if err := plotResults(o.plot, results); err != nil {
			return err
		}
	}
	return w.Finalize()
}

// run runs o's tests on w. PE 0 writes each result to out as it comes and
// returns them all.
func run(w *shmem.World, o *options, out io.Writer) ([]result, error) {
	largest := 8
	for _, t := range o.tests {
		for _, s := range t.sizesFor(o.sizes) {
			largest = max(largest, s)
		}
	}
	sym, err := shmem.Malloc[byte](w, largest)
	if err != nil {
		return nil, fmt.Errorf("symmetric buffer of %s: %w", formatSize(largest), err)
	}
	word, err := shmem.Calloc[int64](w, 1)
	if err != nil {
		return nil, err
	}
	word32, err := shmem.Calloc[int32](w, 1)
	if err != nil {
		return nil, err
	}
	e := &env{w: w, peer: min(1, w.NPEs()-1), sym: sym, local: make([]byte, largest), word: &word[0], word32: &word32[0],
		iters: o.iters, warmup: o.warmup, window: o.win, largest: largest}
	// Written, as bench/peer/shmemperf.c writes its buffer: a buffer never
	// written reads as the kernel's one zero page, which stays in cache,
	// so a large put over a socket would copy from cache where the C
	// program's copies from memory.
	for i := range e.local {
		e.local[i] = 1
	}
	me := w.MyPE()
	if me == 0 && !o.json {
		tableHeader(out, w.Provider(), w.NPEs())
	}
	var results []result
	var missing []string
	for _, t := range o.tests {
		if t.unavailable != "" {
			missing = append(missing, t.name+" ("+t.unavailable+")")
			if me == 0 && !o.json {
				tableUnavailable(out, t)
			}
			continue
		}
		for _, size := range t.sizesFor(o.sizes) {
			us, err := t.run(e, size)
			if err != nil {
				return nil, fmt.Errorf("%s, %d bytes: %w", t.name, size, err)
			}
			if me != 0 {
				continue
			}
			r := newResult(t, w.Provider(), w.NPEs(), size, perSecond(t.metric, us, size))
			results = append(results, r)
			if o.json {
				err = writeJSON(out, r)
			} else {
				tableRow(out, r)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if me == 0 && o.json && len(missing) > 0 { // a table has their rows
		fmt.Fprintln(os.Stderr, "shmemperf: unavailable:", strings.Join(missing, ", "))
	}
	if len(e.wrong) > 0 {
		return results, fmt.Errorf("%d collectives computed wrong results on PE %d: %s", len(e.wrong), me, strings.Join(e.wrong, "; "))
	}
	return results, nil
}
