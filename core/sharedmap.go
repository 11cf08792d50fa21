package core

// SharedMap is implemented by domains whose PEs map each other's regions
// (DirectAccess) and keep, beside them, control words that follow a
// written protocol: how a write into a peer's region wakes the peer's
// waiters, and which memory barriers the two sides owe each other. Code
// outside the provider that follows the same protocol, such as a C
// runtime in the same process, can then store into peers' memory itself,
// without a call into the provider per operation, and interoperate with
// the provider's own endpoints and waiters on every PE.
//
// The protocol is the provider's to define and document; a user must know
// it by name and version exactly and must not use the map otherwise.
type SharedMap interface {
	DirectAccess
	// SharedProtocol names the protocol the control words follow and the
	// version of their layout.
	SharedProtocol() (name string, version int)
	// ControlWords returns pe's control words as mapped here, laid out as
	// the protocol says, or nil if pe is not a PE of the job or the domain
	// is closed. The mapping stays valid until the domain closes.
	ControlWords(pe int) []byte
	// RegionIndex returns the number by which the protocol names r (in the
	// ranges waiters watch), or -1 if r is not a region of this domain.
	RegionIndex(r Region) int
	// WritersFence reports whether a writer must issue a full memory
	// barrier between landing data in a peer's region and reading that
	// peer's control words; when false, waiters pay for the handshake
	// instead and writers need no barrier.
	WritersFence() bool
}
