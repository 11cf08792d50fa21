package hybrid_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
	_ "github.com/goshmem/goshmem/providers/hybrid"
	_ "github.com/goshmem/goshmem/providers/ntbring"
	_ "github.com/goshmem/goshmem/providers/tcp"
)

// TestMain runs a PE of a conformance case or of a killed-PE job in
// processes started for one, else the tests.
func TestMain(m *testing.M) { conformance.Main(m) }

// The whole suite over tcp between hosts and loopback inside them, the
// PEs posing as 2 hosts of 2 PEs (here, under the race detector too) and
// 3 hosts of 2 PEs (TestConformanceTCPWide, without it; -short skips it).
func TestConformanceTCP(t *testing.T) {
	conformance.Run(t, conformance.Harness{Provider: "tcp", PEsPerHost: 2, NPEs: []int{4}})
}

func TestConformanceTCPWide(t *testing.T) {
	conformance.SkipUnderRace(t)
	if testing.Short() {
		t.Skip("-short: 2 x 2 only (TestConformanceTCP)")
	}
	conformance.Run(t, conformance.Harness{Provider: "tcp", PEsPerHost: 2, NPEs: []int{6}})
}
