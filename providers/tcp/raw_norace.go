//go:build !race

package tcp

// rawRace says that the race detector is on (raw_race.go).
const rawRace = false
