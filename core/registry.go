package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

var (
	registryMu sync.RWMutex
	registry   = map[string]Provider{}
)

// Register makes a provider available by name. It is meant to be called
// from the provider package's init, like database/sql.Register, and panics
// if p is nil, its name is empty or malformed, or the name is taken.
func Register(p Provider) {
	if p == nil {
		panic("core: Register of nil provider")
	}
	name := p.Name()
	if err := checkName(name); err != nil {
		panic("core: Register: " + err.Error())
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("core: Register called twice for provider " + name)
	}
	registry[name] = p
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("empty provider name")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("provider name %q: only a-z, 0-9, '-' and '_' are allowed", name)
		}
	}
	return nil
}

// Providers returns the registered providers sorted by name.
func Providers() []Provider {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Provider, 0, len(registry))
	for _, p := range registry {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Names returns the registered provider names, sorted.
func Names() []string {
	ps := Providers()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name()
	}
	return names
}

// Lookup returns the provider registered under name.
func Lookup(name string) (Provider, error) {
	registryMu.RLock()
	p, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, &UnknownProviderError{Name: name, Known: Names()}
	}
	return p, nil
}

// Select picks the provider for a job from a GOSHMEM_PROVIDER value and the
// number of distinct hosts the job's PEs run on:
//
//	""           the fitting provider with the highest Preference
//	"tcp"        that provider
//	"shm,tcp"    the first of the list that fits the job
//	"^tcp"       automatic selection among all but the listed ones
//
// A name that is not registered is an error listing the known ones; a
// named provider that cannot serve the job is an error saying why. There is
// no silent fallback.
func Select(spec string, hosts int) (Provider, error) {
	spec = strings.TrimSpace(spec)
	exclude := strings.HasPrefix(spec, "^")
	spec = strings.TrimPrefix(spec, "^")
	var names []string
	if spec != "" {
		for _, n := range strings.Split(spec, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				return nil, &EnvError{Var: EnvProvider, Value: spec,
					Allowed: "a provider name, a comma-separated preference list (loopback,tcp) or an exclusion (^tcp)"}
			}
			if _, err := Lookup(n); err != nil {
				return nil, err
			}
			names = append(names, n)
		}
	}
	if len(names) > 0 && !exclude {
		var why []string
		for _, n := range names {
			p, _ := Lookup(n)
			if err := fits(p, hosts); err != nil {
				why = append(why, err.Error())
				continue
			}
			return p, nil
		}
		return nil, fmt.Errorf("%s=%s: no listed provider can serve this job: %s: %w",
			EnvProvider, spec, strings.Join(why, "; "), ErrNotSupported)
	}
	var best Provider
	bestPref := 0
	for _, p := range Providers() {
		info := p.Info()
		if info.Preference <= 0 || slices.Contains(names, p.Name()) || fits(p, hosts) != nil {
			continue
		}
		if best == nil || info.Preference > bestPref {
			best, bestPref = p, info.Preference
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no provider can serve a job on %d host(s) (known providers: %s; set %s): %w",
			hosts, strings.Join(Names(), ", "), EnvProvider, ErrNotSupported)
	}
	return best, nil
}

func fits(p Provider, hosts int) error {
	if info := p.Info(); info.Locality == OneHost && hosts > 1 {
		return fmt.Errorf("%s serves PEs on one host, but the job spans %d hosts", p.Name(), hosts)
	}
	return nil
}
