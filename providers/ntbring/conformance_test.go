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

// Eight workers share the two scratchpad groups of a link, and 4K slots
// cut every large transfer into many pieces: the suite again, in process.
func TestConformanceEightWorkersSmallSlots(t *testing.T) {
	h := harness
	h.Env = map[string]string{
		"GOSHMEM_NTBRING_PROTOCOL":  "seed",
		"GOSHMEM_NTBRING_WORKERS":   "8",
		"GOSHMEM_NTBRING_SLOT_SIZE": "4K",
	}
	conformance.Run(t, h)
}
