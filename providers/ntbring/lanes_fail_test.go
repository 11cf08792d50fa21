package ntbring_test

import (
	"fmt"
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// A PE killed on one of the hosts of 2 PEs (separate processes, each
// PE the node of its lane of its host's emulated device, loopback inside
// the hosts): every other PE, on its host, on its lane and on the other
// lane, errors within the bound instead of waiting for it. On two hosts
// the victim is the PE of lane 1, then that of lane 0, whose device
// files hold the link's words; on four, the PE of lane 1 of host 2, in
// the middle of the ring, whom the PEs of lane 0 and of the hosts that
// are not its neighbours hear of through the bootstrap only.
func TestLanesPEKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	for _, c := range []struct{ hosts, victim int }{{2, 3}, {2, 2}, {4, 5}} {
		t.Run(fmt.Sprintf("%dx2/PE%d", c.hosts, c.victim), func(t *testing.T) {
			conformance.RunKilledPE(t, conformance.KilledPE{
				Provider: "ntbring", NPEs: 2 * c.hosts, PEsPerHost: 2, Victim: c.victim,
				// A small heap: eight PEs moving 256 MiB each onto their
				// device's files would take seconds of a loaded host.
				Env: map[string]string{"GOSHMEM_NTBRING_TIMEOUT": "5s", "GOSHMEM_NTB_MODEL": "off",
					"SHMEM_SYMMETRIC_SIZE": "32M"},
				Composite: "ntbring+loopback",
			})
		})
	}
}
