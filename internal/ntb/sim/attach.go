package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
)

// The parameters of a fabric a provider attaches to, GOSHMEM_NTB_SIM_<NAME>.
var (
	paramModel = core.NewParam("ntb", "SIM_MODEL", Gen3x8.Name,
		`device model of the simulated fabric: "gen3x8" (PCIe Gen3 x8) or "gen4x16" (PCIe Gen4 x16)`).WithChoices(ModelNames...)
	paramSeed = core.NewParam("ntb", "SIM_SEED", "1",
		"seed of the simulated fabric's random draws")
	paramOpCost = core.NewParam("ntb", "SIM_OP_COST", "",
		"host CPU time charged per DMA descriptor and doorbell (default: the model's, 200ns)")
	paramTopology = core.NewParam("ntb", "SIM_TOPOLOGY", "ring",
		`how the simulated fabric's hosts are cabled: "ring" (two ports a host), "torus" (a 2D torus of four ports a host, `+
			`rows as long as the squarest grid of the hosts allows) or "torus:WxH" (W hosts a row, H rows)`)
)

// Params lists the simulator's parameters.
func Params() []core.Param { return []core.Param{paramModel, paramSeed, paramOpCost, paramTopology} }

// topologiesAllowed is what ParseTopology accepts.
const topologiesAllowed = `"ring", "torus" or "torus:WxH" (W, H 2 or more, W*H the hosts)`

// ParseTopology reads a fabric description for n hosts: "ring", "torus"
// or "torus:WxH". It returns Config.Width: 0 for a ring, and for a torus
// the hosts of a row; "torus" takes the squarest grid of 2 or more rows
// of 2 or more hosts (4 x 4 for 16 hosts, 8 x 8 for 64, 2 x 4 for 8).
func ParseTopology(v string, n int) (int, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	bad := func(why string) (int, error) {
		return 0, fmt.Errorf("ntb sim: topology %q for %d hosts: %s; allowed %s: %w", v, n, why, topologiesAllowed, core.ErrInvalid)
	}
	switch {
	case v == "ring":
		return 0, nil
	case v == "torus":
		for h := int(math.Sqrt(float64(n))); h >= 2; h-- {
			if n%h == 0 && n/h >= 2 {
				return n / h, nil
			}
		}
		return bad("the hosts make no grid of 2 or more rows of 2 or more")
	case strings.HasPrefix(v, "torus:"):
		ws, hs, ok := strings.Cut(strings.TrimPrefix(v, "torus:"), "x")
		w, werr := strconv.Atoi(ws)
		h, herr := strconv.Atoi(hs)
		if !ok || werr != nil || herr != nil || w < 2 || h < 2 {
			return bad("not W x H of 2 or more each")
		}
		if w*h != n {
			return bad(fmt.Sprintf("%d x %d is %d hosts", w, h, w*h))
		}
		return w, nil
	}
	return bad("unknown")
}

// TopologyName describes the fabric of n hosts with Config.Width width:
// "ring", or "torus WxH".
func TopologyName(width, n int) string {
	if width == 0 {
		return "ring"
	}
	return fmt.Sprintf("torus %dx%d", width, n/width)
}

// ConfigFromEnv reads the GOSHMEM_NTB_SIM_* variables through lookup for
// a ring of n hosts.
func ConfigFromEnv(lookup func(string) (string, bool), n int) (Config, error) {
	cfg := core.Config{Env: lookup}
	name, err := cfg.Choice(paramModel)
	if err != nil {
		return Config{}, err
	}
	m := Models[name]
	seed, err := strconv.ParseUint(strings.TrimSpace(cfg.Value(paramSeed)), 10, 64)
	if err != nil {
		return Config{}, &core.EnvError{Var: paramSeed.Env, Value: cfg.Value(paramSeed), Allowed: "an unsigned integer"}
	}
	if v := strings.TrimSpace(cfg.Value(paramOpCost)); v != "" {
		if m.OpCost, err = cfg.DurationIn(paramOpCost, 0, maxOpCost); err != nil {
			return Config{}, err
		}
	}
	width, err := ParseTopology(cfg.Value(paramTopology), n)
	if err != nil {
		return Config{}, &core.EnvError{Var: paramTopology.Env, Value: cfg.Value(paramTopology), Allowed: topologiesAllowed}
	}
	return Config{Hosts: n, Width: width, Model: m, Seed: seed}, nil
}

// maxOpCost bounds GOSHMEM_NTB_SIM_OP_COST: more than a millisecond per
// operation models no CPU.
const maxOpCost = time.Millisecond

// The fabrics hosts attach to, by job and tag: hosts of one job that are
// goroutines of one process find each other here.
var registry = struct {
	sync.Mutex
	prepared map[string]Config
	fabrics  map[string]map[string]*attached
}{prepared: map[string]Config{}, fabrics: map[string]map[string]*attached{}}

type attached struct {
	f    *Fabric
	held []bool
	left int
}

// Prepare has the fabrics of job made with cfg (its Hosts must match the
// job's) rather than from the environment, until Unprepare.
func Prepare(job string, cfg Config) {
	registry.Lock()
	registry.prepared[job] = cfg
	registry.Unlock()
}

// Unprepare forgets what Prepare said about job.
func Unprepare(job string) {
	registry.Lock()
	delete(registry.prepared, job)
	registry.Unlock()
}

// Fabrics are the fabrics hosts of job are attached to now.
func Fabrics(job string) []*Fabric {
	registry.Lock()
	defer registry.Unlock()
	var out []*Fabric
	for _, a := range registry.fabrics[job] {
		out = append(out, a.f)
	}
	return out
}

// Attach joins host to the fabric of job and tag, making it with cfg
// (or what Prepare gave for job) when host is the first to come. The
// fabric is dropped once every host that attached has closed it, with
// release.
func Attach(job, tag string, host int, cfg Config) (h *Host, release func() error, err error) {
	registry.Lock()
	defer registry.Unlock()
	if c, ok := registry.prepared[job]; ok {
		if c.Hosts != cfg.Hosts {
			return nil, nil, fmt.Errorf("ntb sim: job %s was prepared for %d hosts, not %d: %w", job, c.Hosts, cfg.Hosts, core.ErrInvalid)
		}
		cfg = c
	}
	tags := registry.fabrics[job]
	if tags == nil {
		tags = map[string]*attached{}
		registry.fabrics[job] = tags
	}
	a := tags[tag]
	if a == nil {
		f, err := New(cfg)
		if err != nil {
			return nil, nil, err
		}
		a = &attached{f: f, held: make([]bool, cfg.Hosts)}
		tags[tag] = a
	}
	switch {
	case len(a.f.hosts) != cfg.Hosts:
		return nil, nil, fmt.Errorf("ntb sim: a fabric of %d hosts, not %d: %w", len(a.f.hosts), cfg.Hosts, core.ErrInvalid)
	case host < 0 || host >= cfg.Hosts:
		return nil, nil, fmt.Errorf("ntb sim: host %d of %d: %w", host, cfg.Hosts, core.ErrInvalid)
	case a.held[host]:
		return nil, nil, fmt.Errorf("ntb sim: host %d attached twice: %w", host, core.ErrInvalid)
	}
	a.held[host] = true
	a.left++
	h = a.f.hosts[host]
	var once sync.Once
	release = func() error {
		once.Do(func() {
			_ = h.Close()
			registry.Lock()
			defer registry.Unlock()
			if a.left--; a.left == 0 {
				delete(tags, tag)
				if len(tags) == 0 && registry.fabrics[job] != nil && len(registry.fabrics[job]) == 0 {
					delete(registry.fabrics, job)
				}
			}
		})
		return nil
	}
	return h, release, nil
}
