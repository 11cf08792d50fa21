package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"text/tabwriter"
	"time"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb/emu"
	"github.com/goshmem/goshmem/internal/ntb/sim"
	_ "github.com/goshmem/goshmem/providers/ntbring"
)

// simOptions are sim's flags.
type simOptions struct {
	hosts    []int
	model    sim.Model
	seed     uint64
	protocol []string
	topos    []string // "ring", "torus"
	size     int
	asJSON   bool
	plot     string
	exps     []string
}

// simExperiments are the experiments sim knows, in the order the default
// set runs them.
var simExperiments = []string{"hops", "barrier", "coll", "alltoall", "cut", "check"}

// simResult is what sim measured; its JSON form is sim -json's output.
type simResult struct {
	Model    sim.Model     `json:"model"`
	Seed     uint64        `json:"seed"`
	Hops     []hopRow      `json:"hops,omitempty"`
	Barrier  []barrierRow  `json:"barrier,omitempty"`
	Alltoall []alltoallRow `json:"alltoall,omitempty"`
	Cut      []cutRow      `json:"cut,omitempty"`
	Check    []checkRow    `json:"check,omitempty"`
	Coll     []collRow     `json:"collectives,omitempty"`
}

// checkRow sets the simulator beside the real-time emulator on 2 hosts:
// a put of Size bytes to the neighbour, the simulator's model made the
// emulator's (emuModel).
type checkRow struct {
	Size    int     `json:"size"`
	EmuMBps float64 `json:"emu_mbps"`
	SimMBps float64 `json:"sim_mbps"`
	Ratio   float64 `json:"sim_over_emu"`
}

// emuModel is the emulator's Gen3 x8 model (internal/ntb/emu.Gen3x8) as
// a simulator's: DMA at 6.5 GB/s of payload per direction, shared by a
// port's channels, a microsecond per descriptor and per peer scratchpad
// read, nothing else paced.
var emuModel = sim.Model{
	Name: "emu-gen3x8", LinkBytesPerSec: emu.Gen3x8.DMABytesPerSec, MaxPayload: 256,
	DMASetup: emu.Gen3x8.DMASetup, ReadRoundTrip: emu.Gen3x8.SpadReadLatency, LocalCopyBytesPerSec: 10e9,
}

// checkSizes are the transfers of the check: large, where the emulator
// is paced by its model rather than by the CPUs.
var checkSizes = []int{1 << 20, 4 << 20, 16 << 20}

// hopRow is one protocol's put and get at one hop count on a ring of
// Hosts: latency of an 8-byte operation and a quiet, and the rate of a
// put of Size bytes.
type hopRow struct {
	Protocol string  `json:"protocol"`
	Fabric   string  `json:"fabric"`
	Hosts    int     `json:"hosts"`
	Hops     int     `json:"hops"`
	PutNs    float64 `json:"put8_ns"`
	GetNs    float64 `json:"get8_ns"`
	Size     int     `json:"size"`
	PutMBps  float64 `json:"put_mbps"`
	GetMBps  float64 `json:"get_mbps"`
	LinkMBps float64 `json:"link_payload_mbps"`
	OpCostNs int64   `json:"op_cost_ns"`
}

type barrierRow struct {
	Protocol string  `json:"protocol"`
	Fabric   string  `json:"fabric"`
	Hosts    int     `json:"hosts"`
	Us       float64 `json:"barrier_us"`
}

// alltoallRow: every host puts Size bytes to every other host at once.
type alltoallRow struct {
	Protocol    string  `json:"protocol"`
	Fabric      string  `json:"fabric"`
	Hosts       int     `json:"hosts"`
	Size        int     `json:"size"`
	Us          float64 `json:"time_us"`
	PerHostMBps float64 `json:"per_host_mbps"`
	TotalMBps   float64 `json:"total_mbps"`
	// LinkShare is the fraction of the links' payload capacity the
	// exchange used, counting every hop a byte takes.
	LinkShare float64 `json:"link_busy"`
}

// cutRow: a stream of puts across one link, cut part-way.
type cutRow struct {
	Protocol   string  `json:"protocol"`
	Fabric     string  `json:"fabric"`
	Hosts      int     `json:"hosts"`
	BeforeMBps float64 `json:"before_mbps"`
	AfterMBps  float64 `json:"after_mbps"`
	RerouteUs  float64 `json:"first_put_after_cut_us"`
}

func runSim(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ntbtool sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hosts := fs.String("hosts", "2,3,4,8,16", "ring sizes, comma separated (2 to 64)")
	model := fs.String("model", sim.Gen3x8.Name, "device model: "+strings.Join(sim.ModelNames, " or "))
	seed := fs.Uint64("seed", 1, "seed of the fabric's random draws")
	protos := fs.String("protocol", "ring,seed", `protocols: "ring", "seed" or both`)
	size := fs.String("size", "4M", "bytes of a bandwidth transfer")
	opCost := fs.Duration("op-cost", -1, "host CPU time per DMA descriptor and doorbell (default: the model's)")
	topo := fs.String("topology", "ring", `fabrics, comma separated: "ring" (two ports a host) and "torus" (a 2D torus of four ports a host, the squarest grid of each size; the ring protocol only)`)
	asJSON := fs.Bool("json", false, "print JSON")
	plotFile := fs.String("plot", "", "also draw the key figures into this file (.png or .svg)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ntbtool sim [flags] [experiment ...]\nexperiments: %s (default: all)\n", strings.Join(simExperiments, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	o := simOptions{seed: *seed, asJSON: *asJSON, exps: fs.Args(), plot: *plotFile}
	for _, t := range strings.Split(*topo, ",") {
		t = strings.TrimSpace(t)
		if t != "ring" && t != "torus" {
			return usageError{fmt.Sprintf("-topology: %q: \"ring\" or \"torus\"", t)}
		}
		o.topos = append(o.topos, t)
	}
	var err error
	if o.model, err = sim.ModelByName(*model); err != nil {
		return usageError{err.Error()}
	}
	if *opCost >= 0 {
		o.model.OpCost = *opCost
	}
	for _, h := range strings.Split(*hosts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(h))
		if err != nil || n < 2 || n > 64 {
			return usageError{fmt.Sprintf("-hosts: %q: ring sizes from 2 to 64", h)}
		}
		o.hosts = append(o.hosts, n)
	}
	for _, p := range strings.Split(*protos, ",") {
		p = strings.TrimSpace(p)
		if p != "ring" && p != "seed" {
			return usageError{fmt.Sprintf("-protocol: %q: \"ring\" or \"seed\"", p)}
		}
		o.protocol = append(o.protocol, p)
	}
	n, err := core.ParseSize(*size)
	if err != nil || n < 8 || n > 64<<20 {
		return usageError{fmt.Sprintf("-size %q: 8 bytes to 64M", *size)}
	}
	o.size = int(n)
	if len(o.exps) == 0 {
		o.exps = simExperiments
	}
	for _, e := range o.exps {
		if !slices.Contains(simExperiments, e) {
			return usageError{fmt.Sprintf("unknown experiment %q: %s", e, strings.Join(simExperiments, ", "))}
		}
	}
	// One processor: the order in which goroutines acting at one
	// virtual instant run then varies least between runs.
	runtime.GOMAXPROCS(1)
	var res simResult
	if slices.Contains(o.exps, "check") {
		// The emulator runs in real time, outside the bubble.
		if err := o.checkEmu(&res); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	inBubble(stderr, func() error {
		if err := o.run(&res); err != nil {
			return err
		}
		if o.plot != "" {
			if err := plotSim(o.plot, res); err != nil {
				return err
			}
		}
		if o.asJSON {
			return writeJSON(stdout, res)
		}
		return printSim(stdout, res)
	})
	return nil
}

// inBubble runs f in a testing/synctest bubble, where time is virtual.
// The testing package offers bubbles only to tests, so this hosts a run
// of one test, whose own report is discarded; it ends the process, with
// status 0 if f succeeded and 1 (f's error on stderr) if not.
func inBubble(stderr io.Writer, f func() error) {
	if devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		os.Stdout = devnull
	}
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
	testing.Main(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "sim", F: func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if err := f(); err != nil {
					fmt.Fprintln(stderr, "ntbtool:", err)
					t.Fail()
				}
			})
		}}}, nil, nil)
}

// simJob is a job of n hosts on a simulated fabric, every host a
// goroutine: its domains, one region and one endpoint each.
type simJob struct {
	id   string
	n    int
	doms []core.Domain
	regs []core.Region
	eps  []core.Endpoint
	dir  string
}

// simRegion is each host's region: room for the largest transfer and
// for the alltoall's blocks.
const simRegion = 80 << 20

var simJobs int

// fabric is one protocol on one topology of the simulated fabric.
type fabric struct {
	proto, topo string
}

// fabrics are the protocols and topologies sim measures: the seeds'
// protocol runs on a ring only.
func (o *simOptions) fabrics() []fabric {
	var out []fabric
	for _, t := range o.topos {
		for _, p := range o.protocol {
			if t == "ring" || p == "ring" {
				out = append(out, fabric{p, t})
			}
		}
	}
	return out
}

// sizes are the sizes of o.hosts that topology topo can be made of: a
// torus needs 2 or more rows of 2 or more hosts.
func (o *simOptions) sizes(topo string) []int {
	var out []int
	for _, n := range o.hosts {
		if _, err := sim.ParseTopology(topo, n); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// width is Config.Width of topology topo at n hosts.
func width(topo string, n int) int {
	w, _ := sim.ParseTopology(topo, n)
	return w
}

func (o *simOptions) open(n int, fb fabric) (*simJob, error) {
	return o.openOn(n, fb.proto, width(fb.topo, n), "sim", o.model)
}

// openOn opens a job of n hosts on device ("sim" or "emu"), the
// simulator's with model m, a ring or (width not 0) a torus.
func (o *simOptions) openOn(n int, proto string, width int, device string, m sim.Model) (*simJob, error) {
	simJobs++
	j := &simJob{id: fmt.Sprintf("sim-%d-%d", n, simJobs), n: n}
	dir, err := os.MkdirTemp("", "ntbsim")
	if err != nil {
		return nil, err
	}
	j.dir = dir
	sim.Prepare(j.id, sim.Config{Hosts: n, Width: width, Model: m, Seed: o.seed})
	env := map[string]string{
		core.EnvShmDir:             dir,
		"GOSHMEM_NTBRING_DEVICE":   device,
		"GOSHMEM_NTBRING_PROTOCOL": proto,
		"GOSHMEM_NTBRING_TIMEOUT":  "10s",
		"GOSHMEM_NTB_MODEL":        "gen3x8",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	boots := bootstrap.NewLocal(n)
	j.doms = make([]core.Domain, n)
	j.regs = make([]core.Region, n)
	j.eps = make([]core.Endpoint, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, d, err := core.Open(&core.Config{Bootstrap: boots[i], JobID: j.id, Env: lookup}, "ntbring")
			if err != nil {
				errs[i] = err
				return
			}
			j.doms[i] = d
			if j.regs[i], err = d.NewRegion(simRegion); err == nil {
				j.eps[i], err = d.NewEndpoint(core.EndpointOptions{})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = j.close()
		return nil, fmt.Errorf("a %s of %d hosts (%s): %w", sim.TopologyName(width, n), n, proto, err)
	}
	return j, nil
}

func (j *simJob) close() error {
	var wg sync.WaitGroup
	errs := make([]error, j.n)
	for i, d := range j.doms {
		if d != nil {
			wg.Go(func() { errs[i] = d.Close() })
		}
	}
	wg.Wait()
	sim.Unprepare(j.id)
	return errors.Join(append(errs, os.RemoveAll(j.dir))...)
}

// each runs f on every host at once.
func (j *simJob) each(f func(h int) error) error {
	errs := make([]error, j.n)
	var wg sync.WaitGroup
	for h := range j.n {
		wg.Go(func() { errs[h] = f(h) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (j *simJob) barrier() error {
	return j.each(func(h int) error {
		b, ok := j.doms[h].(core.Barrierer)
		if !ok {
			return fmt.Errorf("host %d: the domain has no barrier: %w", h, core.ErrNotSupported)
		}
		return b.Barrier()
	})
}

// fabric is the job's simulated fabric.
func (j *simJob) fabric() *sim.Fabric {
	if fs := sim.Fabrics(j.id); len(fs) == 1 {
		return fs[0]
	}
	return nil
}

// timed is the median of how long f took, in virtual time, over reps
// runs. Goroutines that act at one virtual instant still run in an order
// the runtime picks, which now and then moves a figure; the median of a
// few runs is the figure most runs give.
func timed(reps int, f func() error) (time.Duration, error) {
	ds := make([]time.Duration, reps)
	for i := range reps {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ds[i] = time.Since(start)
	}
	return medianOf(ds), nil
}

// medianOf is the median of ds, which it sorts.
func medianOf(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func mbps(bytes int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e6
}

func (o *simOptions) run(res *simResult) error {
	res.Model, res.Seed = o.model, o.seed
	for _, e := range o.exps {
		var err error
		switch e {
		case "hops":
			err = o.hops(res)
		case "barrier":
			err = o.barriers(res)
		case "alltoall":
			err = o.alltoall(res)
		case "cut":
			err = o.cut(res)
		case "check":
			err = o.checkSim(res)
		case "coll":
			err = o.colls(res)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e, err)
		}
	}
	return nil
}

// hopTargets is, by hop count from host 0, the first host that far
// away on a ring (width 0) or torus of n hosts.
func hopTargets(n, width int) []int {
	dist := func(a, b, n int) int { d := (b - a + n) % n; return min(d, n-d) }
	out := []int{0}
	for h := 1; h < n; h++ {
		d := dist(0, h, n)
		if width != 0 {
			d = dist(0, h%width, width) + dist(0, h/width, n/width)
		}
		if d == len(out) {
			out = append(out, h)
		}
	}
	return out
}

// hops measures host 0's put and get to a host at each hop count of the
// largest fabric.
func (o *simOptions) hops(res *simResult) error {
	for _, fb := range o.fabrics() {
		ns := o.sizes(fb.topo)
		if len(ns) == 0 {
			continue
		}
		n := slices.Max(ns)
		j, err := o.open(n, fb)
		if err != nil {
			return err
		}
		ep, r := j.eps[0], j.regs[0]
		buf := make([]byte, o.size)
		for hop, pe := range hopTargets(n, width(fb.topo, n)) {
			if hop == 0 {
				continue
			}
			row := hopRow{Protocol: fb.proto, Fabric: sim.TopologyName(width(fb.topo, n), n), Hosts: n, Hops: hop, Size: o.size,
				LinkMBps: o.model.PayloadBytesPerSec() / 1e6, OpCostNs: o.model.OpCost.Nanoseconds()}
			put, err := timed(20, func() error {
				if err := ep.Put(pe, r, 0, buf[:8]); err != nil {
					return err
				}
				return ep.Quiet()
			})
			if err != nil {
				return err
			}
			get, err := timed(20, func() error { return ep.Get(pe, r, 0, buf[:8]) })
			if err != nil {
				return err
			}
			putBig, err := timed(3, func() error {
				if err := ep.Put(pe, r, 0, buf); err != nil {
					return err
				}
				return ep.Quiet()
			})
			if err != nil {
				return err
			}
			getBig, err := timed(3, func() error { return ep.Get(pe, r, 0, buf) })
			if err != nil {
				return err
			}
			row.PutNs, row.GetNs = float64(put.Nanoseconds()), float64(get.Nanoseconds())
			row.PutMBps, row.GetMBps = mbps(o.size, putBig), mbps(o.size, getBig)
			res.Hops = append(res.Hops, row)
		}
		if err := j.close(); err != nil {
			return err
		}
	}
	return nil
}

// barriers times a barrier of every ring size.
func (o *simOptions) barriers(res *simResult) error {
	for _, fb := range o.fabrics() {
		for _, n := range o.sizes(fb.topo) {
			j, err := o.open(n, fb)
			if err != nil {
				return err
			}
			if err := j.barrier(); err != nil {
				return err
			}
			d, err := timed(11, j.barrier)
			if err != nil {
				return err
			}
			res.Barrier = append(res.Barrier, barrierRow{Protocol: fb.proto, Fabric: sim.TopologyName(width(fb.topo, n), n), Hosts: n, Us: float64(d.Nanoseconds()) / 1e3})
			if err := j.close(); err != nil {
				return err
			}
		}
	}
	return nil
}

// alltoallBlock is what each host puts to each other host.
const alltoallBlock = 256 << 10

// alltoall has every host put a block to every other host at once.
func (o *simOptions) alltoall(res *simResult) error {
	for _, fb := range o.fabrics() {
		for _, n := range o.sizes(fb.topo) {
			j, err := o.open(n, fb)
			if err != nil {
				return err
			}
			f := j.fabric()
			src := make([]byte, alltoallBlock)
			const reps = 3
			before := linkBytes(f)
			took, err := timed(reps, func() error {
				return j.each(func(h int) error {
					for k := 1; k < n; k++ {
						pe := (h + k) % n
						if err := j.eps[h].Put(pe, j.regs[h], h*alltoallBlock, src); err != nil {
							return err
						}
					}
					return j.eps[h].Quiet()
				})
			})
			if err != nil {
				return err
			}
			wire := (linkBytes(f) - before) / reps
			bytes := n * (n - 1) * alltoallBlock
			row := alltoallRow{Protocol: fb.proto, Fabric: sim.TopologyName(width(fb.topo, n), n), Hosts: n, Size: alltoallBlock, Us: float64(took.Nanoseconds()) / 1e3,
				PerHostMBps: mbps((n-1)*alltoallBlock, took), TotalMBps: mbps(bytes, took)}
			if f != nil {
				row.LinkShare = float64(wire) / (2 * float64(f.Links()) * o.model.LinkBytesPerSec * took.Seconds())
			}
			res.Alltoall = append(res.Alltoall, row)
			if err := j.close(); err != nil {
				return err
			}
		}
	}
	return nil
}

func linkBytes(f *sim.Fabric) int64 {
	if f == nil {
		return 0
	}
	var t int64
	for k := range f.Links() {
		b := f.LinkBytes(k)
		t += b[0] + b[1]
	}
	return t
}

// cut streams puts from host 0 to host 1 and cuts their link part-way:
// the puts go round the other way.
func (o *simOptions) cut(res *simResult) error {
	const piece, pieces = 256 << 10, 32
	for _, fb := range o.fabrics() {
		if fb.proto != "ring" {
			continue // the seeds' protocol does not reroute
		}
		for _, n := range o.sizes(fb.topo) {
			if n < 3 {
				continue
			}
			j, err := o.open(n, fb)
			if err != nil {
				return err
			}
			ep, r := j.eps[0], j.regs[0]
			src := make([]byte, piece)
			stream := func() (time.Duration, error) {
				return timed(1, func() error {
					for i := range pieces {
						if err := ep.Put(1, r, i*piece, src); err != nil {
							return err
						}
					}
					return ep.Quiet()
				})
			}
			before, err := stream()
			if err != nil {
				return err
			}
			// Link 0 joins host 0's Right port to host 1, on a ring as on
			// a torus.
			j.fabric().SetLinkDown(0, true)
			first, err := timed(1, func() error {
				if err := ep.Put(1, r, 0, src[:8]); err != nil {
					return err
				}
				return ep.Quiet()
			})
			if err != nil {
				return err
			}
			after, err := stream()
			if err != nil {
				return err
			}
			res.Cut = append(res.Cut, cutRow{Protocol: fb.proto, Fabric: sim.TopologyName(width(fb.topo, n), n), Hosts: n, BeforeMBps: mbps(piece*pieces, before),
				AfterMBps: mbps(piece*pieces, after), RerouteUs: float64(first.Nanoseconds()) / 1e3})
			if err := j.close(); err != nil {
				return err
			}
		}
	}
	return nil
}

// putRate is the best rate of a put of size bytes from host 0 to host 1
// and a quiet, over reps runs: on the emulator the best run is the one the
// machine disturbed least.
func putRate(j *simJob, size, reps int) (float64, error) {
	buf := make([]byte, size)
	best := 0.0
	for range reps {
		start := time.Now()
		if err := j.eps[0].Put(1, j.regs[0], 0, buf); err != nil {
			return 0, err
		}
		if err := j.eps[0].Quiet(); err != nil {
			return 0, err
		}
		best = max(best, mbps(size, time.Since(start)))
	}
	return best, nil
}

// checkEmu measures the emulator's half of the check, in real time.
func (o *simOptions) checkEmu(res *simResult) error {
	j, err := o.openOn(2, "ring", 0, "emu", emuModel)
	if err != nil {
		return err
	}
	for _, size := range checkSizes {
		r, err := putRate(j, size, 5)
		if err != nil {
			return errors.Join(err, j.close())
		}
		res.Check = append(res.Check, checkRow{Size: size, EmuMBps: r})
	}
	return j.close()
}

// checkSim measures the simulator's half, on the emulator's model.
func (o *simOptions) checkSim(res *simResult) error {
	j, err := o.openOn(2, "ring", 0, "sim", emuModel)
	if err != nil {
		return err
	}
	for i := range res.Check {
		r, err := putRate(j, res.Check[i].Size, 3)
		if err != nil {
			return errors.Join(err, j.close())
		}
		res.Check[i].SimMBps = r
		res.Check[i].Ratio = r / res.Check[i].EmuMBps
	}
	return j.close()
}

func printSim(w io.Writer, res simResult) error {
	m := res.Model
	fmt.Fprintf(w, "model %s: link %.0f MB/s per direction, %.0f MB/s of payload at %d-byte TLPs; posted write %v, read round trip %v, DMA set-up %v, doorbell %v, CPU per operation %v; seed %d\n",
		m.Name, m.LinkBytesPerSec/1e6, m.PayloadBytesPerSec()/1e6, m.MaxPayload, m.PostedWrite, m.ReadRoundTrip, m.DMASetup, m.DoorbellIRQ, m.OpCost, res.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(res.Hops) > 0 {
		fmt.Fprintf(w, "\nput and get from host 0 by hop count (latency: 8 bytes and a quiet; rate: %s)\n", core.FormatSize(int64(res.Hops[0].Size)))
		fmt.Fprintln(tw, "protocol\tfabric\thosts\thops\tput us\tget us\tput MB/s\tget MB/s\tof link\t")
		for _, r := range res.Hops {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.2f\t%.0f\t%.0f\t%.2f\t\n", r.Protocol, r.Fabric, r.Hosts, r.Hops, r.PutNs/1e3, r.GetNs/1e3, r.PutMBps, r.GetMBps, r.PutMBps/r.LinkMBps)
		}
		tw.Flush()
	}
	if len(res.Barrier) > 0 {
		fmt.Fprintln(w, "\nbarrier by fabric size")
		fmt.Fprintln(tw, "protocol\tfabric\thosts\tbarrier us\t")
		for _, r := range res.Barrier {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t\n", r.Protocol, r.Fabric, r.Hosts, r.Us)
		}
		tw.Flush()
	}
	if len(res.Coll) > 0 {
		fmt.Fprintln(w, "\nshmem's collectives on the world team (broadcast from PE 0): the slowest PE's time")
		fmt.Fprintln(tw, "protocol\tfabric\thosts\top\tbytes\tus\t")
		for _, r := range res.Coll {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%.2f\t\n", r.Protocol, r.Fabric, r.Hosts, r.Op, r.Bytes, r.Us)
		}
		tw.Flush()
	}
	if len(res.Alltoall) > 0 {
		fmt.Fprintf(w, "\nalltoall: every host puts %s to every other host at once\n", core.FormatSize(int64(res.Alltoall[0].Size)))
		fmt.Fprintln(tw, "protocol\tfabric\thosts\ttime us\tper host MB/s\ttotal MB/s\tlinks busy\t")
		for _, r := range res.Alltoall {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t\n", r.Protocol, r.Fabric, r.Hosts, r.Us, r.PerHostMBps, r.TotalMBps, r.LinkShare)
		}
		tw.Flush()
	}
	if len(res.Check) > 0 {
		fmt.Fprintln(w, "\nthe simulator against the real-time emulator: 2 hosts, a put to the neighbour, both on the emulator's model (6500 MB/s of DMA, 1us per descriptor)")
		fmt.Fprintln(tw, "size\temulator MB/s\tsimulator MB/s\tsim/emu\t")
		for _, r := range res.Check {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t\n", core.FormatSize(int64(r.Size)), r.EmuMBps, r.SimMBps, r.Ratio)
		}
		tw.Flush()
	}
	if len(res.Cut) > 0 {
		fmt.Fprintln(w, "\na cut: host 0 streams 8M to host 1 in 256K puts, link 0 is cut, the stream again")
		fmt.Fprintln(tw, "protocol\tfabric\thosts\tbefore MB/s\tfirst put after us\tafter MB/s\t")
		for _, r := range res.Cut {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.1f\t%.0f\t\n", r.Protocol, r.Fabric, r.Hosts, r.BeforeMBps, r.RerouteUs, r.AfterMBps)
		}
		tw.Flush()
	}
	return nil
}
