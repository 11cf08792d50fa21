package ntbring_test

import (
	"testing"

	"github.com/goshmem/goshmem/conformance"
)

// The lanes figures of docs/results.md, "ntbring+loopback: lanes": an 8-byte put (then quiet), get and
// fetch-add from PE 0 to a PE of another host, in a job of 2 hosts x 2
// PEs (ntbring+loopback, each PE the node of its lane) to the PE of its
// own lane and to the PE of the other lane, beside ntbring alone at one
// PE per host (2 hosts), on the emulated device's default timing model.
func BenchmarkLanesPair(b *testing.B) {
	twoByTwo := []string{"a", "a", "b", "b"}
	for _, c := range []struct {
		name   string
		hosts  []string
		target int
	}{
		{"2x2/other-host-same-lane", twoByTwo, 2},
		{"2x2/other-host-other-lane", twoByTwo, 3},
		{"1x2-alone/other-host", []string{"a", "b"}, 1},
	} {
		conformance.BenchPair(b, c.name, "ntbring", c.hosts, nil, c.target)
	}
}
