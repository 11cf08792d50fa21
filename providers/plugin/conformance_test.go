package plugin_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// The whole suite, through the plugin boundary: every PE's provider is the
// example plugin, a separate process serving loopback. In-process runs take
// 2, 3 and 4 PEs; process runs, each PE two processes here and the most
// expensive runs of the package, take 2 and 4, leaving odd job sizes to
// the in-process runs, which go through the same plugin processes.
var (
	harness          = conformance.Harness{Provider: examplePlugin, NPEs: []int{2, 3, 4}}
	processesHarness = conformance.Harness{Provider: examplePlugin, NPEs: []int{2, 4}}
)

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

func TestConformanceProcesses(t *testing.T) { conformance.RunProcesses(t, processesHarness) }
