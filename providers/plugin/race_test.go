//go:build race

package plugin_test

// raceEnabled builds the test plugins with the race detector too.
const raceEnabled = true
