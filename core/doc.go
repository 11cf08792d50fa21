// Package core is goshmem's provider-neutral contract: what a transport
// must do for OpenSHMEM, and nothing about any one transport.
//
// The objects, in the order a PE meets them:
//
//   - Provider: a registered transport (Register, Providers, Lookup). Its
//     Info describes capabilities and parameters without opening anything.
//   - Bootstrap: the job's out-of-band channel (rank, size, allgather,
//     barrier, liveness); see bootstrap for implementations.
//   - Open / Select: pick a provider from GOSHMEM_PROVIDER and the job's
//     host count, identically on every PE, and open a Domain.
//   - Domain: this PE's membership in the job. It creates symmetric
//     Regions collectively and Endpoints locally.
//   - Endpoint: a stream of one-sided operations (put, get, atomics, fence,
//     quiet) with its own completion Counter; one per OpenSHMEM context.
//
// Optional interfaces say what a transport does beyond the contract, and
// their users fall back where it does not: DirectAccess (peers' memory
// mapped here), LocalWaiter (sleep until a watched word changes),
// Barrierer (a barrier of the transport's own), among others. Optional
// operations of an endpoint are no interfaces of their own: they are in
// the Endpoint contract, with a capability bit that says whether the
// provider does them as one (CapPutSignal: PutSignal, else PutFenceSignal's
// Put, Fence and Atomic), so that an endpoint wrapped by another keeps them.
//
// Lifetimes and ownership. The caller owns a Domain and must Close it,
// collectively, once; Close closes the domain's endpoints and regions and
// unmaps memory, and no goroutine the domain started outlives it. A Region's
// Local slice is valid until its domain closes. Endpoints may be closed
// earlier, one by one. Buffers passed to PutNBI and GetNBI belong to the
// provider until the endpoint's next Quiet returns.
//
// Errors. Every error unwraps to one of the sentinels (ErrInvalid,
// ErrOutOfBounds, ErrNotSupported, ErrPeerLost, ErrTimeout, ErrClosed,
// ErrNoMemory) through a typed error carrying the detail (PEError,
// BoundsError, AlignError, PeerLostError, EnvError, OpError, ...).
//
// core imports no provider, no shmem, no bootstrap store (package
// bootstrap builds on core, not the other way), no launcher, and neither
// golang.org/x/sys nor unsafe; internal/layering keeps it so.
package core
