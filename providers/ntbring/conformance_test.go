package ntbring_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
	_ "github.com/goshmem/goshmem/providers/ntbring"
)

func TestMain(m *testing.M) { conformance.Main(m) }

var harness = conformance.Harness{
	Provider: "ntbring",
	NPEs:     []int{2, 3, 4, 5},
	Env:      map[string]string{"GOSHMEM_NTBRING_PROTOCOL": "seed"},
}

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

func TestConformanceProcesses(t *testing.T) { conformance.RunProcesses(t, harness) }
