package plugin

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

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

// ByNameOnly implements core.ByName: a plugin is started only for a job
// whose GOSHMEM_PROVIDER names it, never by automatic selection, so a
// broken executable on the search path costs no other job anything.
func (p *provider) ByNameOnly() bool { return true }

// Info implements core.Provider. It starts the plugin the first time it is
// called, asks it, and ends it, all within GOSHMEM_PLUGIN_START_TIMEOUT. A
// plugin that cannot answer is listed with the error as its description,
// no capabilities and no preference, and Open reports the error.
func (p *provider) Info() core.Info {
	p.once.Do(func() { p.info, p.infoErr = p.load(os.LookupEnv, "") })
	return p.info
}

// load asks the plugin for its Info; socketDir is where its socket goes
// (see start).
func (p *provider) load(lookup func(string) (string, bool), socketDir string) (core.Info, error) {
	wait, err := startTimeout(lookup)
	var in core.Info
	if err == nil {
		in, err = p.ask(wait, socketDir)
	}
	if err != nil {
		return core.Info{Name: p.name, Description: "unavailable: " + err.Error(),
			Origin:   fmt.Sprintf("plugin %s, protocol %d", p.path, ProtocolVersion),
			Locality: core.OneHost, Progress: core.ProgressManual, Params: pluginParams(p.name)}, err
	}
	return hostInfo(in, p.name, p.path), nil
}

// ask starts the plugin and asks its Info, the answer bounded like the
// start: a sane plugin answers from memory.
func (p *provider) ask(wait time.Duration, socketDir string) (core.Info, error) {
	pr, err := start(p.name, p.path, wait, wait, socketDir)
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
	if err == nil {
		p.once.Do(func() { p.info, p.infoErr = p.load(cfg.Lookup, dir) })
		err = p.infoErr
	}
	if err := core.Agree(cfg.Bootstrap, err); err != nil {
		if dir != "" {
			core.LeaveJobDir(dir)
		}
		return nil, err
	}
	d, err := openDomain(p, p.info, cfg, set, dir)
	if err != nil {
		core.LeaveJobDir(dir)
	}
	return d, err
}
