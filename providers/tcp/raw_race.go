//go:build race

package tcp

// rawRace says that the race detector is on: the socket's non-blocking
// reads and writes go through the syscall package, which tells the
// detector that what one goroutine wrote to a file another read from it.
const rawRace = true
