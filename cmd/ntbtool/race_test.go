//go:build race

package main

// raceEnabled: the race detector perturbs the order of goroutines, which
// sim's figures of small operations depend on (docs/ntb-sim.md, "What is
// not modelled").
const raceEnabled = true
