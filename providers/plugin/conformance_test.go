package plugin_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// The whole suite, through the plugin boundary: every PE's provider is the
// example plugin, a separate process serving loopback, with 2, 3 and 4 PEs
// in-process and as processes (each PE then two processes).
var harness = conformance.Harness{Provider: examplePlugin, NPEs: []int{2, 3, 4}}

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

func TestConformanceProcesses(t *testing.T) { conformance.RunProcesses(t, harness) }
