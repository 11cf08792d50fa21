package main

import (
	"strings"

	"github.com/goshmem/goshmem/core"
)

// composites returns the composite providers core.Open builds from ps
// for jobs that span hosts with several PEs on one host: one over each
// provider that serves any hosts and that selection considers (asking a
// by-name provider, a plugin, would start it).
func composites(ps []core.Provider) []core.Provider {
	c := core.RegisteredComposer()
	if c == nil {
		return nil
	}
	var out []core.Provider
	for _, p := range ps {
		if bn, ok := p.(core.ByName); ok && bn.ByNameOnly() {
			continue
		}
		if p.Info().Locality == core.AnyHost {
			out = append(out, c.Compose(p))
		}
	}
	return out
}

// lookup finds a registered provider, or a composite by its name
// ("tcp+loopback").
func lookup(name string) (core.Provider, error) {
	p, err := core.Lookup(name)
	if err == nil || !strings.Contains(name, "+") {
		return p, err
	}
	inter, _, _ := strings.Cut(name, "+")
	if q, qerr := core.Lookup(inter); qerr == nil {
		for _, c := range composites([]core.Provider{q}) {
			if c.Name() == name {
				return c, nil
			}
		}
	}
	return nil, err
}
