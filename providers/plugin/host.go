package plugin

import (
	"context"
	"fmt"
	"sync"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// provider is a plugin executable as a core.Provider on the host. It
// starts the executable to learn its Info (once, then it remembers) and
// once more for every domain it opens: each PE's domain has its own
// plugin process, which ends with the domain.
type provider struct {
	name, path string

	once    sync.Once
	info    core.Info
	infoErr error
}

// New returns the provider served by the plugin executable at path under
// the given name. Nothing starts until Info or Open is called.
func New(name, path string) core.Provider {
	return &provider{name: name, path: path}
}

func (p *provider) Name() string { return p.name }

// Info implements core.Provider. It starts the plugin the first time it is
// called, asks it, and ends it. A plugin that cannot answer is listed
// with the error as its description, no capabilities and no preference,
// so automatic selection never picks it and Open reports the error.
func (p *provider) Info() core.Info {
	p.once.Do(func() { p.info, p.infoErr = p.load() })
	return p.info
}

func (p *provider) load() (core.Info, error) {
	in, err := p.ask()
	if err != nil {
		return core.Info{Name: p.name, Description: "unavailable: " + err.Error(),
			Origin:   fmt.Sprintf("plugin %s, protocol %d", p.path, ProtocolVersion),
			Locality: core.OneHost, Progress: core.ProgressManual, Params: pluginParams(p.name)}, err
	}
	return hostInfo(in, p.name, p.path), nil
}

func (p *provider) ask() (core.Info, error) {
	pr, err := start(p.name, p.path, defaultTimeout)
	if err != nil {
		return core.Info{}, err
	}
	defer pr.kill()
	var r *pb.InfoReply
	err = pr.call("info", func(ctx context.Context) (err error) {
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
	return in, nil
}

// Open implements core.Provider: it starts this PE's plugin process and
// opens the wrapped provider's domain in it (see domain).
func (p *provider) Open(cfg *core.Config) (core.Domain, error) {
	info := p.Info()
	if p.infoErr != nil {
		return nil, p.infoErr
	}
	if cfg.Bootstrap == nil {
		return nil, fmt.Errorf("no bootstrap in the configuration: %w", core.ErrInvalid)
	}
	set, err := readSettings(cfg, p.name)
	if err := core.Agree(cfg.Bootstrap, err); err != nil {
		return nil, err
	}
	return openDomain(p, info, cfg, set)
}
