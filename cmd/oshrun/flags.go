package main

import (
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/launcher"
)

// envFlag collects -x arguments, as Open MPI's mpirun takes them:
// -x VAR=value sets VAR for the PEs; -x VAR exports VAR, which PEs on this
// host get anyway and PEs on other hosts get because it is named.
type envFlag struct {
	set    []string // VAR=value
	export []string // VAR
}

func (e *envFlag) String() string {
	if e == nil {
		return ""
	}
	return strings.Join(append(append([]string(nil), e.set...), e.export...), " ")
}

func (e *envFlag) Set(s string) error {
	name, _, hasValue := strings.Cut(s, "=")
	if name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("want VAR or VAR=value, got %q", s)
	}
	if hasValue {
		e.set = append(e.set, s)
	} else {
		e.export = append(e.export, name)
	}
	return nil
}

// hostsFlag collects -H/--host lists; repeated flags add up.
type hostsFlag struct{ hosts []launcher.Host }

func (h *hostsFlag) String() string {
	if h == nil {
		return ""
	}
	parts := make([]string, len(h.hosts))
	for i, x := range h.hosts {
		parts[i] = fmt.Sprintf("%s:%d", x.Name, x.Slots)
	}
	return strings.Join(parts, ",")
}

func (h *hostsFlag) Set(s string) error {
	hosts, err := launcher.ParseHosts(s)
	if err != nil {
		return err
	}
	for _, x := range hosts {
		merged := false
		for i := range h.hosts {
			if h.hosts[i].Name == x.Name {
				h.hosts[i].Slots += x.Slots
				merged = true
			}
		}
		if !merged {
			h.hosts = append(h.hosts, x)
		}
	}
	return nil
}

// bindToFlag is --bind-to, Open MPI's spelling: share (the default)
// binds each PE of a host to its share of the host's CPUs where they fit,
// core each to one CPU, none leaves the PEs unbound. Open MPI's other
// levels (socket, numa, hwthread) have no counterpart and are refused
// rather than read as something they do not mean.
type bindToFlag struct{ b *launcher.Binding }

func (f bindToFlag) String() string {
	if f.b == nil {
		return ""
	}
	return string(*f.b)
}

func (f bindToFlag) Set(s string) error {
	b, err := launcher.ParseBinding(s)
	if err != nil {
		return err
	}
	*f.b = b
	return nil
}

// cpubindFlag is -cpubind, a switch for --bind-to core (and, set false,
// none). It sets the same variable as --bind-to, so the last of the two
// on the command line wins.
type cpubindFlag struct{ b *launcher.Binding }

func (f cpubindFlag) IsBoolFlag() bool { return true }

func (f cpubindFlag) String() string {
	return strconv.FormatBool(f.b != nil && *f.b == launcher.BindCore)
}

func (f cpubindFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*f.b = launcher.BindNone
	if on {
		*f.b = launcher.BindCore
	}
	return nil
}

// unknownFlag returns the flag name in a flag package error about an
// undefined flag.
func unknownFlag(err error) (string, bool) {
	return strings.CutPrefix(err.Error(), "flag provided but not defined: -")
}

// suggest returns the defined flag of fs that name most likely misspells,
// or "" when none is close: within two edits (a swap of neighbours is
// one), and no more edits than half the name's length, so a short
// unrelated name is not "corrected" to another short one.
func suggest(fs *flag.FlagSet, name string) string {
	name = strings.TrimLeft(name, "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names) // ties go to the first in order, the same every run
	best, bestDist, bestSkew := "", 3, 0
	for _, n := range names {
		d := editDistance(strings.ToLower(name), n)
		if 2*d >= len(name)+1 {
			continue
		}
		// Between flags as close, the one of the typed name's length: a
		// swap ("pn") is likelier than a letter too many.
		skew := max(len(n)-len(name), len(name)-len(n))
		if d < bestDist || d == bestDist && skew < bestSkew {
			best, bestDist, bestSkew = n, d, skew
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
