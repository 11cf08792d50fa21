package main

import (
	"fmt"
	"slices"
	"strings"
)

// metric is what a test measures; it decides the JSON key and the unit.
type metric int

const (
	latency   metric = iota // microseconds per operation
	bandwidth               // 10^6 bytes per second
	rate                    // 10^6 operations per second
)

func (m metric) unit() string { return [...]string{"us", "MB/s", "M/s"}[m] }

// test is one benchmark.
type test struct {
	name   string
	doc    string
	metric metric
	// sizes, if set, are the only sizes the test runs at, whatever -sizes
	// says: {8} for the 8-byte rates and atomics, {0} for barrier.
	sizes []int
	// collective marks the collectives, which plots draw in a panel of
	// their own, apart from the point-to-point curves.
	collective bool
	// activeSet names, for a team routine, the active-set routine of the
	// same collective (team_bcast_lat: bcast_lat), which a comparison sets
	// it beside where the other program has no teams.
	activeSet string
	// unavailable, if set, says why package shmem has no such routine.
	// The test keeps its name, which bench/peer/shmemperf.c shares, and is
	// reported as unavailable instead of run; run is nil.
	unavailable string
	// run measures the operation on size bytes and returns the
	// microseconds one takes, which the metric's figure is computed from.
	// It is collective: every PE calls it with the same size; only PE 0's
	// figure is reported.
	run func(e *env, size int) (float64, error)
}

// registry holds the tests in the order they were registered.
var registry []test

// register adds t; a name registered twice is a programming error.
func register(t test) {
	if t.name == "" || (t.run == nil) == (t.unavailable == "") || strings.ContainsAny(t.name, ", ") {
		panic("shmemperf: test without a name, with neither or both of a run function and a reason it is unavailable, or with a comma or space in its name")
	}
	if _, ok := lookupTest(t.name); ok {
		panic("shmemperf: test " + t.name + " registered twice")
	}
	registry = append(registry, t)
}

func lookupTest(name string) (test, bool) {
	i := slices.IndexFunc(registry, func(t test) bool { return t.name == name })
	if i < 0 {
		return test{}, false
	}
	return registry[i], true
}

func testNames() []string {
	names := make([]string, len(registry))
	for i, t := range registry {
		names[i] = t.name
	}
	return names
}

// selectTests resolves -test: "all", or names separated by commas.
func selectTests(spec string) ([]test, error) {
	if strings.TrimSpace(spec) == "all" {
		return slices.Clone(registry), nil
	}
	var out []test
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		t, ok := lookupTest(name)
		if !ok {
			return nil, fmt.Errorf("-test: unknown test %q; known: all, %s", name, strings.Join(testNames(), ", "))
		}
		if !slices.ContainsFunc(out, func(u test) bool { return u.name == name }) {
			out = append(out, t)
		}
	}
	return out, nil
}

// sizesFor is the sizes t runs at, given -sizes.
func (t test) sizesFor(sizes []int) []int {
	if t.sizes != nil {
		return t.sizes
	}
	return sizes
}

// activeSetOf returns the active-set test a team test is set beside.
func activeSetOf(name string) (string, bool) {
	t, ok := lookupTest(name)
	return t.activeSet, ok && t.activeSet != ""
}

// isCollective reports whether the test named name is a collective.
func isCollective(name string) bool {
	t, ok := lookupTest(name)
	return ok && t.collective
}
