package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// provider is a plugin executable as a core.Provider on the host. What it
// offers is read from its manifest (see ManifestPath), never by starting
// it; each PE's Open starts one plugin process for its domain, asks it
// what it offers there, and the process ends with the domain.
type provider struct {
	name, path string

	once sync.Once
	info core.Info // from the manifest, for listings

	mu      sync.Mutex
	live    core.Info // the wrapped provider's Info, as the last process started said
	hasLive bool
}

// New returns the provider served by the plugin executable at path under
// the given name. Nothing starts until Open is called.
func New(name, path string) core.Provider {
	return &provider{name: name, path: path}
}

func (p *provider) Name() string { return p.name }

// ByNameOnly implements core.ByName: a plugin is started only for a job
// whose GOSHMEM_PROVIDER names it, never by automatic selection, so a
// broken executable on the search path costs no other job anything.
func (p *provider) ByNameOnly() bool { return true }

// Info implements core.Provider from the plugin's manifest, read once; it
// starts nothing. Without a usable manifest the plugin is listed with the
// reason as its description, no capabilities and no preference; it can
// still be named and opened, and Open learns what it offers from the
// process it starts, which Info returns from then on (shmem reads the
// capabilities of the provider it opened).
func (p *provider) Info() core.Info {
	// Once a process of this program's has said what it offers (a domain
	// opened), that is the truth, manifest or not.
	p.mu.Lock()
	live, ok := p.live, p.hasLive
	p.mu.Unlock()
	if ok {
		return hostInfo(live, p.name, p.path)
	}
	p.once.Do(func() {
		in, err := readManifest(p.path)
		if err != nil {
			why := err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				why = "no manifest " + ManifestPath(p.path)
			}
			p.info = core.Info{Name: p.name,
				Description: fmt.Sprintf("unknown until started: %s (write it with `provinfo -check %s` or `%s %s > %s`)",
					why, p.name, p.path, ManifestFlag, ManifestPath(p.path)),
				Origin: fmt.Sprintf("plugin %s, protocol %d", p.path, ProtocolVersion),
				// Named, it may serve a job on any number of hosts: Open
				// finds out what it really offers.
				Locality: core.AnyHost, Progress: core.ProgressManual, Params: pluginParams(p.name)}
			return
		}
		p.info = hostInfo(in, p.name, p.path)
	})
	return p.info
}

// ask asks a started plugin what it offers, the answer bounded like the
// start: a sane plugin answers from memory.
func (p *provider) ask(pr *proc) (core.Info, error) {
	var r *pb.InfoReply
	err := pr.call("info", func(ctx context.Context) (err error) {
		r, err = pr.rpc.Info(ctx, &pb.InfoRequest{})
		return err
	})
	if err != nil {
		return core.Info{}, err
	}
	in, err := decodeInfo(r)
	if err != nil {
		return core.Info{}, pr.fail("info", err)
	}
	p.mu.Lock()
	p.live, p.hasLive = in, true
	p.mu.Unlock()
	return hostInfo(in, p.name, p.path), nil
}

// Open implements core.Provider: it starts this PE's plugin process and
// opens the wrapped provider's domain in it (see domain). The plugin's
// socket goes in the job directory, which this PE owns until its domain
// closes, so a PE that dies leaves it where the job's other files are
// removed.
func (p *provider) Open(cfg *core.Config) (core.Domain, error) {
	if cfg.Bootstrap == nil {
		return nil, fmt.Errorf("no bootstrap in the configuration: %w", core.ErrInvalid)
	}
	set, err := readSettings(cfg, p.name)
	dir := ""
	if err == nil {
		dir, err = cfg.MakeJobDir()
	}
	if err := core.Agree(cfg.Bootstrap, err); err != nil {
		if dir != "" {
			core.LeaveJobDir(dir)
		}
		return nil, err
	}
	d, err := openDomain(p, cfg, set, dir)
	if err != nil {
		core.LeaveJobDir(dir)
	}
	return d, err
}
