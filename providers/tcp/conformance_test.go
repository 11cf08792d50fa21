package tcp_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

func TestMain(m *testing.M) { conformance.Main(m) }

var harness = conformance.Harness{Provider: "tcp"}

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

func TestConformanceProcesses(t *testing.T) { conformance.RunProcesses(t, harness) }
