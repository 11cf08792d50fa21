package tcp_test

import (
	"os"
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// TestMain runs a child scenario (see procs_test.go) in processes started
// for one, else the conformance child or the tests.
func TestMain(m *testing.M) {
	if name, ok := os.LookupEnv(envScenario); ok {
		os.Exit(runScenario(name))
	}
	conformance.Main(m)
}

var harness = conformance.Harness{Provider: "tcp"}

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

func TestConformanceProcesses(t *testing.T) { conformance.RunProcesses(t, harness) }
