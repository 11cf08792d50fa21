package core

import "sync"

// A Source finds providers that no package registers from init, such as
// plugin executables on a search path. taken reports whether a name is
// registered already; a Source returns only providers under other names.
type Source func(taken func(name string) bool) []Provider

var (
	sourcesMu   sync.Mutex
	sources     []Source
	sourcesDone bool
)

// AddSource adds a Source, consulted once, at the first Lookup, Providers
// or Select: after every package's init has run, so a provider a package
// registers always keeps its name, whatever order packages initialize in.
// A Source added after that first query is consulted at the next one.
// Nothing is consulted, and nothing scanned, in a program that adds none.
func AddSource(s Source) {
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	sources = append(sources, s)
	sourcesDone = false
}

// consultSources registers what the sources not yet consulted find.
func consultSources() {
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	if sourcesDone {
		return
	}
	sourcesDone = true
	pending := sources
	sources = nil
	taken := func(name string) bool {
		registryMu.RLock()
		defer registryMu.RUnlock()
		_, ok := registry[name]
		return ok
	}
	for _, s := range pending {
		for _, p := range s(taken) {
			if p != nil && CheckName(p.Name()) == nil && !taken(p.Name()) {
				Register(p)
			}
		}
	}
}
