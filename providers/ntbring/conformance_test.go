package ntbring_test

import (
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goshmem/goshmem/conformance"
	_ "github.com/goshmem/goshmem/providers/hybrid"
	_ "github.com/goshmem/goshmem/providers/ntbring"
)

// TestMain runs a PE of a conformance case or of a killed-PE job
// (lanes_fail_test.go) in processes started for one, else the tests.
func TestMain(m *testing.M) { conformance.Main(m) }

// harness runs the suite on the default protocol, "ring", with 2 to 5
// hosts.
var harness = conformance.Harness{
	Provider: "ntbring",
	NPEs:     []int{2, 3, 4, 5},
}

// seedHarness runs it on the seeds' protocol, on fewer ring sizes: the
// protocol is kept for comparison, and the full matrix would double the
// package's test time.
//
// The seeds carry one transfer per scratchpad group, two groups a link,
// and each waits for the neighbour's worker to free its group. The flow
// cases' default 100,000 operations each way took 47-60 s a case under
// the race detector with two CPUs busy (a full test run's load), 162 s of
// the package's time; 10,000, five thousand times what a link holds,
// prove the same flow control. The watchdog is longer than the default
// two minutes all the same, for a heavily loaded machine.
var seedHarness = conformance.Harness{
	Provider: "ntbring",
	NPEs:     []int{2, 5},
	Env:      map[string]string{"GOSHMEM_NTBRING_PROTOCOL": "seed"},
	Timeout:  5 * time.Minute,
	FlowOps:  10_000,
}

func TestConformance(t *testing.T) { conformance.Run(t, harness) }

// As processes, the smallest ring (where the flow cases run) and the
// largest (relays two hops each way); the suite in process runs every
// size between. All four sizes as processes took four and a half minutes
// under the race detector, a quarter of the package's time.
func TestConformanceProcesses(t *testing.T) {
	h := harness
	h.NPEs = []int{2, 5}
	conformance.RunProcesses(t, h)
}

func TestConformanceSeed(t *testing.T) { conformance.Run(t, seedHarness) }

func TestConformanceSeedProcesses(t *testing.T) {
	h := seedHarness
	h.NPEs = []int{3}
	conformance.RunProcesses(t, h)
}

// Eight workers, the ring barrier and 4K slots that cut every large
// transfer into many pieces and fill the rings: the suite again, in
// process, on the ring protocol; and the seeds' eight workers sharing the
// two scratchpad groups of a link.
func TestConformanceEightWorkersSmallSlots(t *testing.T) {
	for _, proto := range []string{"ring", "seed"} {
		t.Run(proto, func(t *testing.T) {
			h := harness
			h.NPEs = []int{4}
			h.Env = map[string]string{
				"GOSHMEM_NTBRING_PROTOCOL":  proto,
				"GOSHMEM_NTBRING_BARRIER":   "ring",
				"GOSHMEM_NTBRING_WORKERS":   "8",
				"GOSHMEM_NTBRING_SLOT_SIZE": "4K",
			}
			conformance.Run(t, h)
		})
	}
}

// Several PEs per host: the PEs pose as 2, 3 and 4 hosts of 2 PEs, each
// PE the node of its lane of its host's device, composed with loopback
// for the pairs of one host (ntbring+loopback); -short runs 2 x 2 only.
func TestConformanceLanes(t *testing.T) {
	h := harness
	h.PEsPerHost = 2
	h.NPEs = []int{4, 6, 8}
	if testing.Short() {
		h.NPEs = h.NPEs[:1]
	}
	conformance.Run(t, h)
}

// envLanesProcesses turns on TestConformanceLanesProcesses.
const envLanesProcesses = "GOSHMEM_NTBRING_LANES_PROCESSES"

// The suite again with each PE a process of a launched job, on 4 hosts of
// 2 PEs, the largest of TestConformanceLanes: 65 jobs of 8 processes,
// about 3 minutes under -race on a loaded 2-CPU machine, too long for
// every run; it runs when GOSHMEM_NTBRING_LANES_PROCESSES is 1.
func TestConformanceLanesProcesses(t *testing.T) {
	if os.Getenv(envLanesProcesses) != "1" {
		t.Skipf("set %s=1 to run the suite with a process per PE on 4 hosts of 2 PEs (about 3 minutes)", envLanesProcesses)
	}
	h := harness
	h.PEsPerHost = 2
	h.NPEs = []int{8}
	conformance.RunProcesses(t, h)
}

// The suite on the simulated device (internal/ntb/sim), each case in a
// testing/synctest bubble, so in virtual time, on a ring of 4. The flow
// cases issue 10,000 operations, as seedHarness's: still thousands of
// times what the rings hold, and the package's race run is long already.
func TestConformanceSim(t *testing.T) {
	h := harness
	h.NPEs = []int{4}
	h.Env = map[string]string{"GOSHMEM_NTBRING_DEVICE": "sim"}
	h.Bubble = synctest.Test
	h.FlowOps = 10_000
	conformance.Run(t, h)
}

// The suite on a simulated 4 x 4 torus (GOSHMEM_NTB_SIM_TOPOLOGY), the
// same provider routing by the shortest paths of the torus, with four
// links a host: 16 hosts, each case in a testing/synctest bubble.
//
// It runs without the race detector alone: under it, 16 hosts of the
// suite take more than ten minutes here. The torus's own code runs under
// it in TestSimTorus and TestSimTorusCut, the protocol's in
// TestConformanceSim.
func TestConformanceSimTorus(t *testing.T) {
	conformance.SkipUnderRace(t)
	h := harness
	h.NPEs = []int{16}
	h.Env = map[string]string{"GOSHMEM_NTBRING_DEVICE": "sim", "GOSHMEM_NTB_SIM_TOPOLOGY": "torus"}
	h.Bubble = synctest.Test
	h.FlowOps = 10_000
	conformance.Run(t, h)
}
