//go:build !linux

package tcp

// pollWriter returns nil: elsewhere issuers' writes wait in the runtime's
// poller.
func pollWriter(w *writer) func(fd uintptr) bool { return nil }

// vecWriter returns nil: elsewhere sockets stay the net package's.
func vecWriter(w *writer) func(fd uintptr) bool { return nil }
