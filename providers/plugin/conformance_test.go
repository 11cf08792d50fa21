package plugin_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
	"github.com/goshmem/goshmem/providers/plugin"
)

// startEnv gives plugins a start timeout for a loaded machine: race-built
// plugins of several PEs start at once, each a process.
var startEnv = map[string]string{plugin.EnvStartTimeout: "60s"}

// The whole suite, through the plugin boundary: every PE's provider is the
// example plugin, a separate process serving loopback. In process with 3
// PEs (the barrier's tree then has a leaf under the root and one beside
// it), as processes (each PE then two processes) with 2, where the flow
// cases run. Each job size costs minutes under the race detector (4 PEs
// as processes, eight processes on two CPUs: five minutes, the longest
// part of the whole suite), and what the boundary does does not depend on
// the size: the providers' own suites run every size, and the in-process
// job has more than two PEs behind the boundary.
var harness = conformance.Harness{Provider: examplePlugin, NPEs: []int{3}, Env: startEnv}

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

func TestConformanceProcesses(t *testing.T) {
	h := harness
	h.NPEs = []int{2}
	conformance.RunProcesses(t, h)
}

// The whole suite through a plugin serving tcp, a provider whose regions
// are its own memory: the plugin registers a shared file with it, which
// the PE maps. Three PEs in-process (the barrier's tree then has a leaf
// under the root and one beside it) and two as processes keep the run
// short; the loopback plugin covers the other job sizes of the boundary.
// It runs without the race detector: the host's side of the boundary is
// the one TestConformance runs under it, and the provider behind it runs
// under it in its own package.
var tcpHarness = conformance.Harness{Provider: tcpPlugin, NPEs: []int{3}, Env: startEnv}

func TestConformanceTCPWide(t *testing.T) {
	conformance.SkipUnderRace(t)
	conformance.Run(t, tcpHarness)
}

func TestConformanceTCPProcesses(t *testing.T) {
	h := tcpHarness
	h.NPEs = []int{2}
	conformance.RunProcesses(t, h)
}
