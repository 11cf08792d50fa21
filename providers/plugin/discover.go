package plugin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goshmem/goshmem/core"
)

// Found is a plugin executable on the search path.
type Found struct {
	Name string // the provider it serves: the file name without Prefix
	Path string
}

// Find lists the plugin executables in the directories of pathList
// (GOSHMEM_PROVIDER_PATH syntax: directories separated by the system's
// list separator, ':' on Unix). Files named goshmem-provider-NAME that are
// regular and executable and whose NAME is a valid provider name count;
// when two directories hold the same NAME, the first wins, as with PATH.
// Nothing is started.
func Find(pathList string) []Found {
	var out []Found
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // a missing directory on a search path is not an error, as with PATH
		}
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), Prefix)
			if !ok || seen[name] || core.CheckName(name) != nil { // Register would panic
				continue
			}
			path := filepath.Join(dir, e.Name())
			if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
				continue
			}
			seen[name] = true
			out = append(out, Found{Name: name, Path: path})
		}
	}
	slices.SortFunc(out, func(a, b Found) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Importing this package is how a program asks for plugins: it adds a
// core.Source that lists the plugins on GOSHMEM_PROVIDER_PATH at the
// program's first provider lookup, after every package's init, so a
// provider linked into the program always keeps its name. A program that
// does not import this package never scans the path, and links neither
// go-plugin nor gRPC.
func init() { core.AddSource(found) }

// found is the Source: every plugin on GOSHMEM_PROVIDER_PATH, as lookup
// has it (nil: the process environment), whose name no provider has.
func found(taken func(string) bool, lookup func(string) (string, bool)) []core.Provider {
	pathList, _ := core.ProviderPathParam.Lookup(lookup)
	var out []core.Provider
	for _, f := range Find(pathList) {
		if !taken(f.Name) {
			out = append(out, New(f.Name, f.Path))
		}
	}
	return out
}

// RegisterFound registers, with core.Register, every plugin that Find
// lists on GOSHMEM_PROVIDER_PATH (read from lookup; nil means the process
// environment) under a name no provider has yet: a built-in provider
// always wins over a plugin of the same name. Plugins are registered
// lazily: nothing starts until the provider's Open is called. It
// returns the plugins it registered. Importing the package does this for
// the process environment already; RegisterFound is for another path.
func RegisterFound(lookup func(string) (string, bool)) []Found {
	pathList, _ := core.ProviderPathParam.Lookup(lookup)
	var out []Found
	for _, f := range Find(pathList) {
		if _, err := core.Lookup(f.Name); err == nil {
			continue
		}
		core.Register(New(f.Name, f.Path))
		out = append(out, f)
	}
	return out
}
