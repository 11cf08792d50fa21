package core

import (
	"fmt"
	"sync"
)

// EnvHybrid turns the intra-host part of a job that spans hosts on or
// off: "1" (the default) lets Open compose the selected inter-host
// provider with a shared-memory transport for pairs of PEs on one host,
// "0" leaves the selected provider to serve every pair, as for measuring
// what the intra-host part gains.
const EnvHybrid = "GOSHMEM_HYBRID"

// Composer builds, from the provider selected for a job that spans hosts,
// a provider that serves pairs of PEs on one host through shared memory
// and every other pair through inter. A provider package registers one
// with RegisterComposer; core knows no transport and only asks it.
type Composer interface {
	// Compose returns the composite provider over inter. It must not
	// start anything: Open calls its Open as it would inter's.
	Compose(inter Provider) Provider
}

var (
	composerMu sync.RWMutex
	composer   Composer
)

// RegisterComposer makes c the composer Open uses for jobs whose PEs span
// hosts with several PEs on some host. It panics if c is nil or one is
// already registered.
func RegisterComposer(c Composer) {
	if c == nil {
		panic("core: RegisterComposer of nil")
	}
	composerMu.Lock()
	defer composerMu.Unlock()
	if composer != nil {
		panic("core: RegisterComposer called twice")
	}
	composer = c
}

// RegisteredComposer returns the registered composer, or nil.
func RegisteredComposer() Composer {
	composerMu.RLock()
	defer composerMu.RUnlock()
	return composer
}

// HybridSetting reads GOSHMEM_HYBRID: whether the intra-host part may be
// composed in. Unset or empty means yes.
func (c *Config) HybridSetting() (bool, error) { return HybridParam.Bool(c.Lookup) }

// TransportDescriber is implemented by domains that serve pairs of PEs
// through more than one transport. Transports says which serves which,
// on one line, as SHMEM_INFO prints it.
type TransportDescriber interface {
	Transports() string
}

// HostMap says which PEs share a host: Host[pe] numbers pe's host (0, 1,
// ... in order of each host's first PE) and PEs[h] lists, in order, the PEs
// of host h.
type HostMap struct {
	Host []int
	PEs  [][]int
}

// NewHostMap builds the map from every PE's host id, indexed by PE.
func NewHostMap(ids []string) HostMap {
	m := HostMap{Host: make([]int, len(ids))}
	index := map[string]int{}
	for pe, id := range ids {
		h, ok := index[id]
		if !ok {
			h = len(m.PEs)
			index[id] = h
			m.PEs = append(m.PEs, nil)
		}
		m.Host[pe] = h
		m.PEs[h] = append(m.PEs[h], pe)
	}
	return m
}

// GatherHosts exchanges host ids (cfg.HostID, else HostID(cfg.Lookup)) over the
// bootstrap: collective.
func GatherHosts(cfg *Config) (HostMap, error) {
	host := cfg.HostID
	if host == "" {
		host = HostID(cfg.Lookup)
	}
	all, err := cfg.Bootstrap.Allgather([]byte(host))
	if err != nil {
		return HostMap{}, fmt.Errorf("exchange of host ids: %w", err)
	}
	ids := make([]string, len(all))
	for pe, m := range all {
		ids[pe] = string(m)
	}
	return NewHostMap(ids), nil
}

// Shared reports whether some host runs more than one PE.
func (m HostMap) Shared() bool {
	for _, pes := range m.PEs {
		if len(pes) > 1 {
			return true
		}
	}
	return false
}

// compose returns the composite of p when the job wants one: a composer
// is registered, the intra-host part is on, p serves any hosts, the job
// spans more than one host and some host runs several PEs.
func compose(p Provider, hybrid bool, hosts HostMap) Provider {
	c := RegisteredComposer()
	if c == nil || !hybrid || len(hosts.PEs) < 2 || !hosts.Shared() || p.Info().Locality != AnyHost {
		return p
	}
	return c.Compose(p)
}
