//go:build !linux

package tcp

// inputSet watches nothing here: the domain offers no InputPending, so a
// composite's waiters do not yield on its word.
type inputSet struct{}

func (*inputSet) close() {}
