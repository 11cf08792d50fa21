package launcher

import (
	"fmt"
	"strings"
)

// Binding is how a host's PEs are placed on the CPUs the launcher may use
// (its own affinity, so a launcher started under taskset or in a cpuset
// deals out only those).
//
// BindShare, oshrun's default, gives each PE of a host its share of the
// CPUs, the same share GOMAXPROCS gives it (CPUs over the host's PEs), as
// mpirun binds ranks to cores by default: two PEs that wait for each
// other then never take turns on one CPU while another idles, and a
// thread the kernel wakes runs where its PE runs. Measured on 2 CPUs with
// 2 PEs, alternating bound and unbound runs of one build: a tcp 8-byte
// put and quiet 19.90 µs bound against 20.01 unbound for Go programs, and
// C programs' 21.24 against 24.68 (unbound, a C program's thread and its
// runtime's threads drift onto one CPU in some runs); tcp 4 MiB
// put bandwidth 3555 against 3011 MB/s (Go) and 3745 against 2737 (C);
// a loopback barrier as fast and steadier (0.89 µs bound, 0.53 to 47
// unbound). Where a host's PEs outnumber its CPUs no share is whole, and
// BindShare leaves them unbound.
//
// BindCore binds the i-th PE of a host to the i-th CPU, dealing them
// round the CPUs again where they outnumber them (PE i to CPU i mod
// CPUs), so each CPU runs an equal share for the whole job: it steadies
// shared-memory latency with more PEs than CPUs (a 4-PE loopback barrier
// on 2 CPUs: 1.88-1.98 µs bound, against runs of either 1.9 or 2.5 µs
// unbound, by where the scheduler first put the PEs). A PE bound to fewer
// CPUs than GOMAXPROCS gives it confines its helper threads there.
type Binding string

const (
	// BindNone leaves placement to the kernel (the zero value does too).
	BindNone Binding = "none"
	// BindShare binds each PE of a host to its share of the CPUs where
	// they fit, and leaves them unbound where they do not.
	BindShare Binding = "share"
	// BindCore binds each PE of a host to one CPU, round the CPUs.
	BindCore Binding = "core"
)

// Bindings lists the values ParseBinding accepts.
var Bindings = []Binding{BindShare, BindCore, BindNone}

// ParseBinding reads a Binding by name.
func ParseBinding(s string) (Binding, error) {
	for _, b := range Bindings {
		if string(b) == s {
			return b, nil
		}
	}
	names := make([]string, len(Bindings))
	for i, b := range Bindings {
		names[i] = string(b)
	}
	return "", fmt.Errorf("%q is not one of %s", s, strings.Join(names, ", "))
}

// cpuSets returns the CPUs each of a host's local PEs (in order) runs on
// under b, given the CPUs the launcher may use, or nil to leave them all
// unbound. Under BindShare the PEs split the CPUs in contiguous runs as
// even as they can be (8 CPUs over 3 PEs: 2, 3 and 3), so that no CPU is
// left to nobody.
func cpuSets(b Binding, cpus []int, local int) [][]int {
	n := len(cpus)
	if n == 0 || local <= 0 {
		return nil
	}
	sets := make([][]int, local)
	switch b {
	case BindCore:
		for i := range sets {
			sets[i] = cpus[i%n : i%n+1]
		}
	case BindShare:
		if local > n {
			return nil
		}
		for i := range sets {
			sets[i] = cpus[i*n/local : (i+1)*n/local]
		}
	default:
		return nil
	}
	return sets
}
