// Package provkit is what every provider's domain and endpoint need and
// would otherwise each write again, as libfabric's providers share
// prov/util: the checks an operation makes before it touches memory or
// the wire, with their errors framed as *core.OpError naming the provider
// and unwrapping to the core sentinel that says what was wrong; an
// endpoint's closed state; and a Close that runs once.
//
// The checks are split the way a provider's fast path wants them: the
// test of a valid operation is small enough to inline into the caller,
// and only a failed check calls further, to build its error. A valid
// operation checked here costs no call and no allocation.
//
// A provider's endpoint embeds Endpoint and checks its targets with
// Target, RMA, Value and Atomic; its domain returns Err's errors and
// closes through a CloseOnce. The package imports core only, so every
// provider may use it, a plugin's host included.
package provkit
