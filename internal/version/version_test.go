package version

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromBuildInfo(t *testing.T) {
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"goshmem is the main module", debug.BuildInfo{
			GoVersion: "go1.26.0",
			Main:      debug.Module{Path: Module, Version: "v1.2.0"},
			Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "0123456789abcdef0123"},
				{Key: "vcs.modified", Value: "true"},
			},
		}, "v1.2.0 (commit 0123456789ab, modified, go1.26.0)"},
		{"clean tree", debug.BuildInfo{
			GoVersion: "go1.26.0",
			Main:      debug.Module{Path: Module, Version: "(devel)"},
			Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}},
		}, "(devel) (commit abc, go1.26.0)"},
		{"a user's program depends on goshmem", debug.BuildInfo{
			GoVersion: "go1.26.1",
			Main:      debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps:      []*debug.Module{{Path: "example.com/other", Version: "v0.1.0"}, {Path: Module, Version: "v1.3.0"}},
			// The user's commit is not goshmem's.
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffffffffffffffff"}},
		}, "v1.3.0 (go1.26.1)"},
		{"replaced", debug.BuildInfo{
			GoVersion: "go1.26.0",
			Main:      debug.Module{Path: "example.com/app"},
			Deps:      []*debug.Module{{Path: Module, Version: "v1.3.0", Replace: &debug.Module{Path: "../goshmem"}}},
		}, "v1.3.0 => ../goshmem (go1.26.0)"},
		{"nothing recorded", debug.BuildInfo{}, "(unknown version)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, fromBuildInfo(&c.bi).String())
		})
	}
}

func TestLine(t *testing.T) {
	l := Line("oshrun")
	require.True(t, strings.HasPrefix(l, "oshrun: goshmem "), l)
	require.Contains(t, l, Read().Go, "the Go version is part of the line")
}
