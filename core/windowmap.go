package core

// WindowMap is implemented by domains that can complete a small put to
// some peers with stores through a window mapped into this process (a
// link's memory window onto the peer's region), followed by a look at a
// few words of the link, as a written protocol says: when a notice must
// follow the stores, how a link that went down is noticed, what quiet
// owes the stores. Code outside the provider that follows the same
// protocol, such as a C runtime in the same process, can then do those
// puts itself and ask the provider only for what the protocol leaves to
// it (WindowLanded).
//
// The protocol is the provider's to define and document; a user must know
// it by name and version exactly and must not use the map otherwise.
type WindowMap interface {
	// WindowProtocol names the protocol and the version of its words,
	// and the largest put, in bytes, that a user may do by stores.
	WindowProtocol() (name string, version, max int)
	// PeerWindow returns the window through which this process stores
	// into pe's part of region r, byte i of the window being byte i of
	// the region, or nil if a put to pe's part of r cannot go that way.
	// It stays mapped until the domain closes.
	PeerWindow(pe int, r Region) []byte
	// PeerLink returns the words of the link a put to pe through its
	// window crosses, laid out as the protocol says, and the word in
	// which the peer acknowledges notices, or nil, nil if puts to pe
	// cannot go through a window. Both stay mapped until the domain
	// closes.
	PeerLink(pe int) (words, acked []byte)
	// WindowLanded is the provider's part of a put of n bytes at off of
	// pe's part of r that a user stored through the window and after which
	// the link's words asked for a notice. It reports false if the put
	// must be done again through the provider's endpoints (the link went
	// down), and an error if the put failed.
	WindowLanded(pe int, r Region, off, n int) (bool, error)
}
