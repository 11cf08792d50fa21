// Package version says which goshmem a program was built from, from the
// build information the Go toolchain records in every binary: the module
// version, the commit and whether the tree had uncommitted changes, and the
// Go version. Every command's --version and SHMEM_VERSION print it, so a
// report of a problem names the build it came from.
package version

import (
	"runtime/debug"
	"strings"
)

// Module is goshmem's module path: a program may be goshmem's own command
// (goshmem is the main module) or a user's program that depends on it.
const Module = "github.com/goshmem/goshmem"

// Build is what the build information says about goshmem in this binary.
type Build struct {
	Version  string // module version: a tag, a pseudo-version or "(devel)"
	Revision string // commit, shortened; empty when not recorded
	Modified bool   // the tree had uncommitted changes when built
	Go       string // the Go toolchain that built the binary
}

// shortRev is how many hex digits of a commit are shown: enough to be
// unique in a repository of this size, short enough to read out.
const shortRev = 12

// Read returns goshmem's build information in this binary. Fields the
// binary does not record are left empty.
func Read() Build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Build {
	b := Build{Go: bi.GoVersion}
	if bi.Main.Path == Module {
		b.Version = bi.Main.Version
		// The vcs settings describe the main module's tree: they are
		// goshmem's only when goshmem is the main module.
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	} else {
		for _, d := range bi.Deps {
			if d.Path == Module {
				b.Version = d.Version
				if d.Replace != nil {
					b.Version += " => " + d.Replace.Path
					if d.Replace.Version != "" {
						b.Version += "@" + d.Replace.Version
					}
				}
				break
			}
		}
	}
	if len(b.Revision) > shortRev {
		b.Revision = b.Revision[:shortRev]
	}
	return b
}

// String is the build without the name: "v1.2.0 (commit 0123456789ab,
// modified, go1.26.0)".
func (b Build) String() string {
	v := b.Version
	if v == "" {
		v = "(unknown version)"
	}
	var parts []string
	if b.Revision != "" {
		parts = append(parts, "commit "+b.Revision)
	}
	if b.Modified {
		parts = append(parts, "modified")
	}
	if b.Go != "" {
		parts = append(parts, b.Go)
	}
	if len(parts) == 0 {
		return v
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

// String is goshmem's version line: "goshmem v1.2.0 (commit …, go1.26.0)".
func String() string { return "goshmem " + Read().String() }

// Line is what a command prints for --version: its name, then String.
func Line(command string) string { return command + ": " + String() }
