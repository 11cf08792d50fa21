// Package provkit is what every provider's domain and endpoint need and
// would otherwise each write again, as libfabric's providers share
// prov/util: the checks an operation makes before it touches memory or
// the wire, with their errors framed as *core.OpError naming the provider
// and unwrapping to the core sentinel that says what was wrong; an
// endpoint's closed state; and a Close that runs once.
//
// A provider's endpoint embeds Endpoint and checks an operation's target
// with CheckRegion, CheckRMA, CheckValue or CheckAtomic, telling them what
// it found the region to be: the size of each PE's part of one of its
// domain's regions, or Foreign. A valid operation's check is one call and
// no allocation (the small ones, CheckOpen and CheckNonFetching, inline);
// a provider whose fast path cannot afford even the call, as loopback's
// and hybrid's cannot, tests a valid operation inline first with
// core.AccessValid and calls the checks only to say what is wrong. What
// is valid is core's to say (core.CheckRMA, core.InBounds), here and
// wherever a provider checks a range itself. Its domain returns Err's errors and closes through
// a CloseOnce. The package imports core only, so every provider may use
// it, a plugin's host included.
package provkit
