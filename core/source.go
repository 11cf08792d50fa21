package core

import "sync"

// A Source finds providers that no package registers from init, such as
// plugin executables on a search path. taken reports whether a name is
// registered already; a Source returns only providers under other names.
// lookup is the environment to read the search path from: the process's
// (nil) when a program first asks for providers, a job's when Open is
// given one (Config.Env).
type Source func(taken func(name string) bool, lookup func(string) (string, bool)) []Provider

var (
	sourcesMu   sync.Mutex
	sources     []Source // not yet consulted
	allSources  []Source
	sourcesDone bool
)

// AddSource adds a Source, consulted once, at the first Lookup, Providers
// or Select: after every package's init has run, so a provider a package
// registers always keeps its name, whatever order packages initialize in.
// A Source added after that first query is consulted at the next one.
// Nothing is consulted, and nothing scanned, in a program that adds none.
// Open of a job with an environment of its own consults every Source
// again in that environment.
func AddSource(s Source) {
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	sources = append(sources, s)
	allSources = append(allSources, s)
	sourcesDone = false
}

// consultSources registers what the sources not yet consulted find in the
// process environment.
func consultSources() {
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	if sourcesDone {
		return
	}
	sourcesDone = true
	pending := sources
	sources = nil
	consult(pending, nil)
}

// consultSourcesIn registers what every source finds in a job's
// environment, under names not taken yet.
func consultSourcesIn(lookup func(string) (string, bool)) {
	consultSources()
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	consult(allSources, lookup)
}

func consult(srcs []Source, lookup func(string) (string, bool)) {
	taken := func(name string) bool {
		registryMu.RLock()
		defer registryMu.RUnlock()
		_, ok := registry[name]
		return ok
	}
	for _, s := range srcs {
		for _, p := range s(taken, lookup) {
			if p != nil && CheckName(p.Name()) == nil && !taken(p.Name()) {
				Register(p)
			}
		}
	}
}
