package hybrid_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// A PE killed on one of two hosts (2 PEs each, separate processes, tcp
// between the hosts): every other PE, the one on its host included,
// errors within the bound instead of waiting for it.
func TestPEKilled(t *testing.T) {
	conformance.RunKilledPE(t, conformance.KilledPE{
		Provider: "tcp", NPEs: 4, PEsPerHost: 2, Victim: 3,
		Env:       map[string]string{"GOSHMEM_TCP_TIMEOUT": "5s"},
		Composite: "tcp+loopback",
	})
}
