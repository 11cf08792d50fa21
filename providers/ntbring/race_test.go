//go:build race

package ntbring_test

// raceEnabled: the build has the race detector.
const raceEnabled = true
