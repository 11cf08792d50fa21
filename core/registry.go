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
	if err := CheckName(name); err != nil {
		panic("core: Register: " + err.Error())
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("core: Register called twice for provider " + name)
	}
	registry[name] = p
}

// CheckName reports whether name may name a provider: one or more of
// a-z, 0-9, '-' and '_', so that it can stand in GOSHMEM_PROVIDER lists and
// in a plugin's file name. The error, ErrInvalid, says what is allowed.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("empty provider name: a name is one or more of a-z, 0-9, '-' and '_': %w", ErrInvalid)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("provider name %q: only a-z, 0-9, '-' and '_' are allowed: %w", name, ErrInvalid)
		}
	}
	return nil
}

// Providers returns the registered providers sorted by name.
func Providers() []Provider {
	consultSources()
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
	consultSources()
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
//	""           the fitting provider with the highest Preference,
//	             among those that are not ByName
//	"tcp"        that provider
//	"shm,tcp"    the first of the list that fits the job
//	"^tcp"       automatic selection among all but the listed ones
//	"^shm,tcp"   the same: a leading "^" excludes the whole list
//	"^shm,^tcp"  the same, each name excluded on its own
//
// A list that prefers some providers and excludes others ("shm,^tcp")
// is refused, as is a "^" without a name: neither says what to pick.
// A name that is not registered is an error listing the known ones; a
// named provider that cannot serve the job is an error saying why. There is
// no silent fallback. A program that links no provider at all gets
// ErrNoProviderLinked, saying how to link one.
func Select(spec string, hosts int) (Provider, error) {
	// Before the spec: with nothing linked, every name is "unknown" and
	// no setting of GOSHMEM_PROVIDER can help.
	if err := noProviderLinked(); err != nil {
		return nil, err
	}
	names, exclude, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	spec = strings.TrimSpace(spec)
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
		if bn, ok := p.(ByName); ok && bn.ByNameOnly() {
			continue // asking would start it (see ByName)
		}
		info := p.Info()
		if info.Preference <= 0 || slices.Contains(names, p.Name()) || fits(p, hosts) != nil {
			continue
		}
		if best == nil || info.Preference > bestPref {
			best, bestPref = p, info.Preference
		}
	}
	if best == nil && exclude {
		return nil, fmt.Errorf("%s=%s excludes every provider that can serve a job on %d host(s) (known providers: %s): %w",
			EnvProvider, spec, hosts, strings.Join(Names(), ", "), ErrNotSupported)
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

// specForms is what GOSHMEM_PROVIDER accepts, for error messages.
const specForms = "a provider name (loopback), a comma-separated preference list (loopback,tcp) " +
	"or a list of providers to exclude (^tcp, ^loopback,tcp or ^loopback,^tcp); unset picks by locality"

// parseSpec splits a GOSHMEM_PROVIDER value into registered names and
// whether they are excluded.
func parseSpec(spec string) (names []string, exclude bool, err error) {
	bad := func(why string) ([]string, bool, error) {
		return nil, false, &EnvError{Var: EnvProvider, Value: spec, Allowed: specForms + " (" + why + ")"}
	}
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, false, nil
	}
	exclude = strings.HasPrefix(s, "^")
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		negated := strings.HasPrefix(n, "^")
		n = strings.TrimSpace(strings.TrimPrefix(n, "^"))
		switch {
		case n == "":
			return bad("an empty name")
		case negated && !exclude:
			return bad(fmt.Sprintf("%q excludes a provider in a list of preferred ones: prefer or exclude, not both", "^"+n))
		case strings.HasPrefix(n, "^"):
			return bad(fmt.Sprintf("%q has more than one ^", "^"+n))
		}
		if _, err := Lookup(n); err != nil {
			return nil, false, fmt.Errorf("%s=%q: %w", EnvProvider, spec, err)
		}
		names = append(names, n)
	}
	return names, exclude, nil
}
