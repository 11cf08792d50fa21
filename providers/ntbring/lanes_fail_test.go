package ntbring_test

import (
	"fmt"
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// A PE killed on one of two hosts of 2 PEs (separate processes, each
// PE the node of its lane of its host's emulated device, loopback inside
// the hosts): every other PE, on its host, on its lane and on the other
// lane, errors within the bound instead of waiting for it. The victim is
// the PE of lane 1, then that of lane 0, whose device files hold the
// link's words.
func TestLanesPEKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("process runs are skipped in -short mode")
	}
	for _, victim := range []int{3, 2} {
		t.Run(fmt.Sprintf("PE%d", victim), func(t *testing.T) {
			conformance.RunKilledPE(t, conformance.KilledPE{
				Provider: "ntbring", NPEs: 4, PEsPerHost: 2, Victim: victim,
				Env:       map[string]string{"GOSHMEM_NTBRING_TIMEOUT": "5s", "GOSHMEM_NTB_MODEL": "off"},
				Composite: "ntbring+loopback",
			})
		})
	}
}
