package hybrid

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/loopback"
)

func init() { core.RegisterComposer(composer{}) }

// composer builds the composite over whichever inter-host provider the
// job selected; loopback serves the pairs inside each host.
type composer struct{}

func (composer) Compose(inter core.Provider) core.Provider {
	intra, err := core.Lookup(loopback.Name)
	if err != nil {
		// loopback is imported above, so it is registered.
		panic("hybrid: " + err.Error())
	}
	return &Provider{Inter: inter, Intra: intra}
}

// Provider is the composite: pairs of PEs on one host go through Intra
// (shared memory), every other pair through Inter. It is not registered
// by name: core.Open composes it when the job spans hosts and some host
// runs several PEs (see core.Composer), and Compose builds it for tests
// and tools.
type Provider struct {
	Inter, Intra core.Provider
}

// Compose returns the composite over inter, as core.Open would build it.
func Compose(inter core.Provider) *Provider {
	return composer{}.Compose(inter).(*Provider)
}

// intraParams are the intra-host provider's settings as the composite
// opens it: loopback's wake-up unset means auto here (see Open).
func intraParams(ps []core.Param) []core.Param {
	ps = slices.Clone(ps)
	for i := range ps {
		if ps[i].Env == loopback.EnvWake {
			ps[i].Default = loopback.WakeAuto
		}
	}
	return ps
}

// Name is "inter+intra", e.g. "tcp+loopback".
func (p *Provider) Name() string { return p.Inter.Name() + "+" + p.Intra.Name() }

// Info describes the combination: what both transports offer, since a
// program does not choose which one carries an operation.
func (p *Provider) Info() core.Info {
	in, out := p.Intra.Info(), p.Inter.Info()
	info := core.Info{
		Name: p.Name(),
		Description: fmt.Sprintf("pairs of PEs on one host through %s, pairs on different hosts through %s (%s=0 turns the intra-host part off)",
			in.Name, out.Name, core.EnvHybrid),
		Version: in.Version + "+" + out.Version,
		// Direct access needs only the intra-host transport: shmem_ptr
		// answers for the PEs of this host and nil for the others, as
		// OpenSHMEM allows.
		// A put-with-signal is one operation where it matters, to
		// another host; on this host it is stores in order. A quiet of
		// some PEs is as selective as the inter-host transport's: on
		// this host every operation completes on return.
		Caps:       in.Caps&out.Caps | in.Caps&core.CapDirectAccess | out.Caps&(core.CapPutSignal|core.CapPEQuiet),
		Locality:   core.AnyHost,
		Progress:   core.ProgressAuto,
		Order:      in.Order & out.Order,
		ThreadSafe: in.ThreadSafe && out.ThreadSafe,
		MaxMsgSize: min(in.MaxMsgSize, out.MaxMsgSize),
		InjectSize: min(in.InjectSize, out.InjectSize),
		Preference: 0,
		Params:     append(append([]core.Param{core.HybridParam}, out.Params...), intraParams(in.Params)...),
		Origin:     out.Origin,
	}
	if in.Progress == core.ProgressManual || out.Progress == core.ProgressManual {
		info.Progress = core.ProgressManual
	}
	for t := range info.Atomics {
		info.Atomics[t] = in.Atomics[t] & out.Atomics[t]
	}
	info.MaxRegionSize = minLimit(in.MaxRegionSize, out.MaxRegionSize)
	// A region is whole pages for the inter-host provider (see NewRegion).
	if page := os.Getpagesize(); info.MaxRegionSize > 0 {
		info.MaxRegionSize -= info.MaxRegionSize % page
	}
	return info
}

// minLimit is the tighter of two limits where 0 means none.
func minLimit(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// Open joins this PE to the job: it learns which PEs share its host,
// opens the inter-host provider over the whole job and the intra-host one
// over the PEs of this host (see group), and agrees on the outcome with
// every PE.
func (p *Provider) Open(cfg *core.Config) (core.Domain, error) {
	b := cfg.Bootstrap
	if b == nil {
		return nil, fmt.Errorf("no bootstrap in the configuration: %w", core.ErrInvalid)
	}
	hosts, err := core.GatherHosts(cfg)
	if err != nil {
		return nil, err
	}
	me := b.Rank()
	h := hosts.Host[me]
	g := &group{parent: b, members: hosts.PEs[h]}
	for i, pe := range g.members {
		if pe == me {
			g.rank = i
		}
	}
	d := &domain{p: p, cfg: cfg, rank: me, npes: b.Size(), boot: b, hosts: hosts, group: g,
		route: make([]int, b.Size())}
	for pe := range d.route {
		d.route[pe] = -1
	}
	for i, pe := range g.members {
		d.route[pe] = i
	}

	inter, err := p.Inter.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s between hosts: %w", p.Inter.Name(), err)
	}
	d.inter = inter
	sub := *cfg
	sub.Bootstrap = g
	// The inter-host provider's goroutines wait in the runtime's poller;
	// with one runtime processor loopback's waiters sleep there too,
	// unless the user says otherwise, so that one wait hears both (see
	// docs/hybrid.md, "Waiting").
	sub.Env = func(key string) (string, bool) {
		if v, ok := cfg.Lookup(key); ok || key != loopback.EnvWake {
			return v, ok
		}
		return loopback.WakeAuto, true
	}
	intra, err := p.Intra.Open(&sub)
	if err = agree(b, err); err != nil {
		if intra != nil {
			_ = intra.Close()
		}
		return nil, fmt.Errorf("%s inside hosts: %w", p.Intra.Name(), errorsJoin(err, inter.Close()))
	}
	d.intra = intra
	d.waiting.setup(intra, inter)
	d.direct, _ = intra.(core.DirectAccess)
	d.failers = failersOf(inter, intra)
	d.atomics = p.Info().Atomics
	if cfg.Log != nil {
		cfg.Log.Debug("hybrid transports", "pairs", d.Transports())
	}
	return d, nil
}

// Transports implements core.TransportDescriber, for SHMEM_INFO: the
// two providers, and the hosts with their PEs.
func (d *domain) Transports() string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s between hosts, %s between PEs of one host;", d.p.Inter.Name(), d.p.Intra.Name())
	for h, pes := range d.hosts.PEs {
		fmt.Fprintf(&s, " host %d: PEs %s", h, peRange(pes))
		if h < len(d.hosts.PEs)-1 {
			s.WriteString(",")
		}
	}
	return s.String()
}

// peRange prints a list of PEs, runs shortened: "0-3,6".
func peRange(pes []int) string {
	var s strings.Builder
	for i := 0; i < len(pes); {
		j := i
		for j+1 < len(pes) && pes[j+1] == pes[j]+1 {
			j++
		}
		if s.Len() > 0 {
			s.WriteString(",")
		}
		if j > i {
			fmt.Fprintf(&s, "%d-%d", pes[i], pes[j])
		} else {
			fmt.Fprintf(&s, "%d", pes[i])
		}
		i = j + 1
	}
	return s.String()
}
