package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/ntb/emu"
)

// perfResult is what perf measured; its JSON form is perf -json's output.
type perfResult struct {
	Hosts      string       `json:"hosts"` // "goroutines" or "processes"
	Model      string       `json:"model"`
	DMAMBps    float64      `json:"model_dma_mbps"`
	DMASetupNs int64        `json:"model_dma_setup_ns"`
	SpadReadNs int64        `json:"model_spad_read_ns"`
	Throughput []throughput `json:"throughput"`
	Latency    []latency    `json:"latency"`
}

// throughput is one size's DMA and CPU-store rates, in MB/s (10^6 bytes).
type throughput struct {
	Size     int64   `json:"size"`
	DMAMBps  float64 `json:"dma_mbps"`
	CPUMBps  float64 `json:"cpu_store_mbps"`
	DMAIters int     `json:"dma_descriptors"`
}

// latency is one operation's distribution over N samples, in nanoseconds.
type latency struct {
	Op    string `json:"op"`
	N     int    `json:"n"`
	AvgNs int64  `json:"avg_ns"`
	P50Ns int64  `json:"p50_ns"`
	P99Ns int64  `json:"p99_ns"`
}

// perfDepth is how many DMA descriptors perf keeps in flight.
const perfDepth = 8

func runPerf(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ntbtool perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", `timing model: "gen3x8" or "off" (default: GOSHMEM_NTB_MODEL, else gen3x8)`)
	sizeList := fs.String("sizes", "1K,4K,16K,64K,256K,1M,4M", "transfer sizes, comma separated")
	per := fs.Duration("time", 200*time.Millisecond, "how long to measure each size")
	n := fs.Int("n", 2000, "samples per latency")
	procs := fs.Bool("procs", false, "run host 1 in a process of its own (default: a goroutine)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	sizes, err := parseSizes(*sizeList)
	if err != nil {
		return err
	}
	if *per <= 0 || *n <= 0 {
		return usageError{"-time and -n must be positive"}
	}
	lookup := os.LookupEnv
	if *model != "" {
		lookup = func(k string) (string, bool) {
			if k == "GOSHMEM_NTB_MODEL" {
				return *model, true
			}
			return os.LookupEnv(k)
		}
	}
	opts, err := emu.OptionsFromEnv(lookup, 2)
	if err != nil {
		return err
	}
	mw := ceilPage(slices.Max(sizes))
	opts.MWMax = max(opts.MWMax, mw)
	dir, err := os.MkdirTemp(core.ShmDir(nil), "ntbtool-perf-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	var l *link
	if *procs {
		l, err = processLink(dir, opts, mw, *model)
	} else {
		l, err = goroutineLink(dir, opts, mw)
	}
	if err != nil {
		return err
	}
	res, err := measure(l, opts, sizes, *per, *n)
	res.Hosts = "goroutines"
	if *procs {
		res.Hosts = "processes"
	}
	if err = errors.Join(err, l.close()); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	return printPerf(stdout, res)
}

func ceilPage(n int64) int64 { return (n + 4095) &^ 4095 }

func parseSizes(list string) ([]int64, error) {
	var sizes []int64
	for f := range strings.SplitSeq(list, ",") {
		n, err := core.ParseSize(f)
		if err != nil || n <= 0 || n > 1<<30 {
			return nil, usageError{fmt.Sprintf("-sizes: %q: allowed sizes from 1 to 1G, as %s", f, core.SizeForms)}
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// link is the link perf measures: host 0's Right port writing into host
// 1's Left port's window, whose handler answers doorbells.
type link struct {
	src   *emu.Port
	win   []byte
	close func() error
}

// goroutineLink makes a ring of two goroutine hosts in dir.
func goroutineLink(dir string, opts emu.Options, mw int64) (*link, error) {
	ring, err := emu.NewRing(dir, 2, opts)
	if err != nil {
		return nil, err
	}
	l := &link{src: ring.Hosts[0].Right, close: ring.Close}
	dst := ring.Hosts[1].Left
	if err := ring.EnableAll(time.Minute); err != nil {
		return nil, errors.Join(err, l.close())
	}
	if _, err := dst.MWSetTrans(0, mw); err != nil {
		return nil, errors.Join(err, l.close())
	}
	if l.win, err = l.src.PeerMW(0); err != nil {
		return nil, errors.Join(err, l.close())
	}
	go echo(dst)
	return l, nil
}

// echo answers every doorbell of p with doorbell 0, until p closes or its
// link goes down.
func echo(p *emu.Port) {
	for e := range p.Events() {
		switch {
		case e.Kind == ntb.DoorbellEvent:
			_ = p.DBClear(e.DB)
			_ = p.PeerDBSet(1)
		case !p.LinkIsUp():
			return
		}
	}
}

// measure measures link l.
func measure(l *link, opts emu.Options, sizes []int64, per time.Duration, n int) (perfResult, error) {
	var res perfResult
	res.Model = "gen3x8"
	if opts.Model.Off() {
		res.Model = "off"
	}
	res.DMAMBps = opts.Model.DMABytesPerSec / 1e6
	res.DMASetupNs = opts.Model.DMASetup.Nanoseconds()
	res.SpadReadNs = opts.Model.SpadReadLatency.Nanoseconds()
	for _, size := range sizes {
		buf := make([]byte, size)
		t := throughput{Size: size}
		var err error
		if t.DMAMBps, t.DMAIters, err = dmaRate(l.src, l.win[:size], buf, per); err != nil {
			return res, err
		}
		t.CPUMBps = storeRate(l.win[:size], buf, per)
		res.Throughput = append(res.Throughput, t)
	}
	src := l.src
	for _, m := range []struct {
		op string
		f  func() error
	}{
		{"doorbell round trip", func() error { return ping(src) }},
		{"peer scratchpad read", func() error { _, err := src.PeerSpadRead(0); return err }},
		{"peer scratchpad write", func() error { return src.PeerSpadWrite(0, 1) }},
	} {
		lat, err := sample(m.op, n, m.f)
		if err != nil {
			return res, err
		}
		res.Latency = append(res.Latency, lat)
	}
	return res, nil
}

// dmaRate keeps perfDepth descriptors of len(buf) bytes in flight on one
// channel for about per and returns the rate in MB/s.
func dmaRate(p *emu.Port, win, buf []byte, per time.Duration) (float64, int, error) {
	ch, err := p.DMA(0)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	descs := 0
	for time.Since(start) < per {
		for range perfDepth {
			if err := ch.Submit(win, buf, nil); err != nil {
				return 0, 0, err
			}
		}
		if err := ch.Wait(); err != nil {
			return 0, 0, err
		}
		descs += perfDepth
	}
	return float64(descs) * float64(len(buf)) / time.Since(start).Seconds() / 1e6, descs, nil
}

// storeRate copies buf into the window with the CPU for about per.
func storeRate(win, buf []byte, per time.Duration) float64 {
	start := time.Now()
	copies := 0
	for time.Since(start) < per {
		for range perfDepth {
			copy(win, buf)
		}
		copies += perfDepth
	}
	return float64(copies) * float64(len(buf)) / time.Since(start).Seconds() / 1e6
}

// ping rings the peer and waits for its echo.
func ping(src *emu.Port) error {
	if err := src.PeerDBSet(1); err != nil {
		return err
	}
	for e := range src.Events() {
		if e.Kind == ntb.DoorbellEvent {
			return src.DBClear(e.DB)
		}
	}
	return fmt.Errorf("port closed during the ping-pong: %w", ntb.ErrClosed)
}

// sample times n calls of f.
func sample(op string, n int, f func() error) (latency, error) {
	d := make([]time.Duration, n)
	var sum time.Duration
	for i := range d {
		start := time.Now()
		if err := f(); err != nil {
			return latency{}, fmt.Errorf("%s: %w", op, err)
		}
		d[i] = time.Since(start)
		sum += d[i]
	}
	slices.Sort(d)
	return latency{Op: op, N: n, AvgNs: (sum / time.Duration(n)).Nanoseconds(),
		P50Ns: d[n/2].Nanoseconds(), P99Ns: d[n*99/100].Nanoseconds()}, nil
}

func printPerf(w io.Writer, r perfResult) error {
	if r.Model == "off" {
		fmt.Fprintf(w, "emulated link between two %s, timing model off\n", r.Hosts)
	} else {
		fmt.Fprintf(w, "emulated link between two %s, model %s: DMA %.0f MB/s, %v per descriptor, peer scratchpad read %v\n",
			r.Hosts, r.Model, r.DMAMBps, time.Duration(r.DMASetupNs), time.Duration(r.SpadReadNs))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "size\tDMA MB/s\tCPU store MB/s\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t\n", core.FormatSize(t.Size), t.DMAMBps, t.CPUMBps)
	}
	fmt.Fprintln(tw, "\t\t\t")
	fmt.Fprintln(tw, "latency\tavg\tp50\tp99\t")
	for _, l := range r.Latency {
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t\n", l.Op, time.Duration(l.AvgNs), time.Duration(l.P50Ns), time.Duration(l.P99Ns))
	}
	return tw.Flush()
}
