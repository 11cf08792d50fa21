package core

import (
	"errors"
	"fmt"
	"strings"
)

// Open selects the provider for this job from spec (GOSHMEM_PROVIDER
// syntax, see Select) and opens this PE's domain on it. It is collective:
// every PE calls it, and every PE gets the same provider or an error. PEs
// that disagree about spec, or whose registries pick different providers
// (different binaries), get an error naming the PEs that differ.
func Open(cfg *Config, spec string) (Provider, Domain, error) {
	b := cfg.Bootstrap
	if cfg.Env != nil {
		// Plugins on the job's GOSHMEM_PROVIDER_PATH.
		consultSourcesIn(cfg.Env)
	}
	host := cfg.HostID
	if host == "" {
		host = HostID(cfg.Lookup)
	}
	hybrid, herr := cfg.HybridSetting()
	if _, err := EmulatedHost(cfg.Lookup); err != nil {
		herr = errors.Join(herr, err)
	}
	if err := Agree(b, herr); err != nil {
		return nil, nil, fmt.Errorf("open: %w", err)
	}
	setting, _ := HybridParam.Lookup(cfg.Lookup)
	all, err := b.Allgather([]byte(spec + "\x00" + host + "\x00" + setting))
	if err != nil {
		return nil, nil, fmt.Errorf("open: exchange of provider choice: %w", err)
	}
	ids := make([]string, len(all))
	for pe, m := range all {
		s, rest, _ := strings.Cut(string(m), "\x00")
		h, set, _ := strings.Cut(rest, "\x00")
		ids[pe] = h
		if s != spec {
			return nil, nil, fmt.Errorf("open: %s differs between PEs: %q on PE %d, %q on PE %d: %w",
				EnvProvider, spec, b.Rank(), s, pe, ErrInvalid)
		}
		if set != setting {
			return nil, nil, fmt.Errorf("open: %s differs between PEs: %q on PE %d, %q on PE %d: %w",
				EnvHybrid, setting, b.Rank(), set, pe, ErrInvalid)
		}
	}
	hosts := NewHostMap(ids)
	p, serr := Select(spec, len(hosts.PEs))
	if serr == nil {
		// Pairs of PEs on one host go through shared memory when the job
		// spans hosts and a composer is linked (see Composer).
		p = compose(p, hybrid, hosts)
	}
	choice := ""
	if serr == nil {
		choice = p.Name()
	}
	names, err := b.Allgather([]byte(choice))
	if err != nil {
		return nil, nil, fmt.Errorf("open: exchange of provider choice: %w", err)
	}
	if serr != nil {
		return nil, nil, serr
	}
	for pe, n := range names {
		if string(n) != choice {
			return nil, nil, fmt.Errorf("open: PE %d selected provider %q but PE %d selected %q; do all PEs run the same program with the same %s?: %w",
				b.Rank(), choice, pe, n, EnvProviderPath, ErrInvalid)
		}
	}
	d, err := p.Open(cfg)
	if err != nil {
		return nil, nil, &OpError{Op: "open", PE: -1, Provider: p.Name(), Err: err}
	}
	return p, d, nil
}
