//go:build !linux

package tcp

// pollWriter returns nil: elsewhere issuers' writes wait in the runtime's
// poller.
func pollWriter(w *writer) func(fd uintptr) bool { return nil }
