package core

import "time"

// Provider is a transport that fulfils the contract. Providers register
// themselves from init with Register.
type Provider interface {
	// Name is the provider's registered name, as GOSHMEM_PROVIDER spells it.
	Name() string
	// Info describes the provider's capabilities and parameters. It must not
	// depend on the environment: provinfo lists it without opening anything.
	Info() Info
	// Open joins this PE to the job's domain. It is collective: every PE of
	// the job calls it, and either all succeed or all return an error.
	Open(cfg *Config) (Domain, error)
}

// ByName is implemented by providers that serve a job only when
// GOSHMEM_PROVIDER names them. Automatic selection (GOSHMEM_PROVIDER unset,
// or a list of exclusions) neither considers nor asks them: learning what
// a plugin offers means starting a program, and a broken one on the
// search path must not cost every job on the host its start.
type ByName interface {
	Provider
	ByNameOnly() bool
}

// Domain is one PE's membership in a job on one provider.
type Domain interface {
	// Rank and Size are this PE's number and the number of PEs in the job.
	Rank() int
	Size() int
	// NewRegion creates a symmetric region of size bytes on every PE. It is
	// collective: every PE passes the same size, in the same order as its
	// other NewRegion calls. RMA addresses a region by (pe, region, offset),
	// like libfabric's offset-based memory registration.
	NewRegion(size int) (Region, error)
	// RegisterRegion makes memory the program already has a symmetric
	// region, as libfabric's fi_mr_reg registers a buffer: a C program's
	// data and bss segments, which OpenSHMEM makes symmetric. It is
	// collective like NewRegion (same order, and every PE passes memory
	// of the same length, else all fail naming the PEs and lengths), and
	// shares NewRegion's numbering of regions. mem must start on a page
	// boundary and be whole pages (see CheckRegisterMem); empty mem is a
	// region of size 0. The region's Local is mem itself: its address
	// never changes and its contents are kept, though a provider whose
	// peers map each other's memory moves mem onto shared memory in
	// place, so the program must not store into mem while the call runs.
	// mem stays the program's: at Close the provider stops sharing it but
	// never unmaps or frees it, and leaves it holding what it held. Such a
	// Local lies where the program put it, so it has only the page
	// alignment asked of mem, not the wider alignment of a NewRegion's.
	RegisterRegion(mem []byte) (Region, error)
	// NewEndpoint creates an independent stream of operations with its own
	// completion counter. It is local, not collective.
	NewEndpoint(opts EndpointOptions) (Endpoint, error)
	// Close leaves the job. It is collective: it returns after every PE has
	// stopped touching this PE's regions, then retires their memory (all
	// but registered regions' own parts, which are left to the program as
	// private memory with their contents). Endpoints and regions are
	// closed with it. Close is idempotent.
	//
	// Retiring is the one policy for memory a program may still hold
	// slices of (a heap block it kept past shmem's Finalize, a peer's part
	// from DirectAccess): every mapping a region handed out stays mapped
	// at its address, to private zeroed memory of this process, as
	// internal/sys's Retire does it. A stale slice then reads zeros or
	// what this process wrote through it since, and writes reach no PE
	// and no other region; it never faults the process. Providers end
	// region memory with Retire, never Unmap.
	Close() error
}

// Region is a symmetric region as this PE sees it.
type Region interface {
	// Local is this PE's part of the region. It stays valid until the domain
	// closes; other PEs read and write it through their endpoints. After
	// Close it is retired (see Domain's Close): harmless to touch, shared
	// with nobody.
	//
	// For a region from NewRegion, its first byte lies at an address
	// aligned to the largest power of two not above its length (and at
	// least a page), on every PE. Each PE has the region at an address of
	// its own, so this is what makes an offset aligned to any power of two
	// up to that an equally aligned address on every PE, as shmem's Align
	// needs: an allocation then has the same offset everywhere and the
	// alignment asked for everywhere. The mappings of internal/sys are
	// aligned so; memory from elsewhere must be too.
	Local() []byte
}

// EndpointOptions are hints about how an endpoint will be used; they map to
// OpenSHMEM's context options.
type EndpointOptions struct {
	// Serialized: the caller never uses the endpoint from two goroutines at once.
	Serialized bool
	// Private: only the goroutine that created the endpoint uses it.
	Private bool
	// NoStore: the caller will not issue puts, non-fetching atomics or
	// stores through this endpoint.
	NoStore bool
}

// Endpoint issues one-sided operations. Offsets address bytes within a
// region; every call validates the PE, the bounds and, for atomics, the
// alignment, and returns an error wrapping ErrInvalid or ErrOutOfBounds
// without touching memory when they are wrong.
type Endpoint interface {
	// Put copies src into pe's region at off. It returns when src may be
	// reused; the data is complete at the target after Quiet.
	Put(pe int, r Region, off int, src []byte) error
	// Get copies pe's region at off into dst and returns when dst is filled.
	Get(pe int, r Region, off int, dst []byte) error
	// PutValue puts the size (1, 2, 4 or 8) low-order bytes of v, in this
	// host's byte order, at off on pe: shmem_p without a buffer to escape
	// to the heap, so small puts allocate nothing.
	PutValue(pe int, r Region, off int, v uint64, size int) error
	// GetValue is the inverse of PutValue: it reads size bytes at off on pe.
	GetValue(pe int, r Region, off int, size int) (uint64, error)
	// PutNBI is Put that may return before src is copied: src must stay
	// unchanged until Quiet returns.
	PutNBI(pe int, r Region, off int, src []byte) error
	// GetNBI is Get that may return before dst is filled; dst is filled when
	// Quiet returns.
	GetNBI(pe int, r Region, off int, dst []byte) error
	// Atomic executes a non-fetching atomic on pe's region at off; it is
	// complete at the target after Quiet. op is AtomicWrite, AtomicAdd,
	// AtomicAnd, AtomicOr or AtomicXor; the others return a value or need a
	// compare operand, so they are FetchAtomic's and ErrInvalid here.
	Atomic(pe int, r Region, off int, op AtomicOp, t AtomicType, operand uint64) error
	// FetchAtomic executes an atomic and returns the value the target held
	// before it. compare is used by AtomicCSwap only.
	FetchAtomic(pe int, r Region, off int, op AtomicOp, t AtomicType, operand, compare uint64) (uint64, error)
	// PutSignal puts src at off in pe's part of r, then applies op with
	// operand to the uint64 at sigOff in pe's part of sigR, such that the
	// signal is seen only once the data has landed (OpenSHMEM's
	// put-with-signal, libfabric's fi_writedata). op is one of Atomic's
	// (AtomicWrite and AtomicAdd are OpenSHMEM's signal operations). It
	// returns when src may be reused; both are complete at the target
	// after Quiet, and the counter counts them as the two operations they
	// are. With src empty it is the Atomic alone. A provider with
	// CapPutSignal carries the two as one (one message, one write: the
	// target applies them together and its waiter wakes once); one
	// without it issues PutFenceSignal, Put, Fence and Atomic in turn,
	// which order the same way.
	PutSignal(pe int, r Region, off int, src []byte, sigR Region, sigOff int, op AtomicOp, operand uint64) error
	// Fence orders: puts and atomics issued before it to one PE complete at
	// that PE before those issued after it.
	Fence() error
	// Quiet returns when every operation this endpoint issued is complete.
	Quiet() error
	// Counter counts this endpoint's issued and completed operations.
	Counter() *Counter
	// Close quiets and releases the endpoint.
	Close() error
}

// DirectAccess is implemented by domains whose peers' regions are mapped
// into this process, so a PE can load from and store to them directly
// (shmem_ptr, UCX's rkey_ptr).
type DirectAccess interface {
	// PeerBytes returns pe's part of r as mapped here, or nil if it is not.
	PeerBytes(pe int, r Region) []byte
}

// LocalWaiter is implemented by domains that can put a PE to sleep until a
// remote operation changes the memory it waits on, instead of polling. Use:
//
//	for range waiting.Polls { if cond() { return } } // Config's Waiting
//	seq, watch := w.WaitArm(r, off, n)
//	for !cond() { seq = w.WaitChange(seq, max) }
//	w.WaitDisarm(watch)
//
// The caller spins, as the job's Waiting says; WaitChange never spins
// again on top of it: it may yield the CPU briefly, then sleeps.
//
// WaitArm announces that the calling goroutine waits for a change to the n
// bytes at off in this PE's part of r (r nil or n 0: to any of this PE's
// memory), so writers elsewhere wake it only when they touch those bytes.
// Wake-ups may be spurious and, for stores that bypass endpoints (direct
// access, this PE's own goroutines), late by up to max; callers re-check
// their condition and bound max. A max <= 0 does not sleep: WaitChange
// returns at once with the current sequence. What WaitChange returns is
// for the next call only: a provider may mark in it that the caller has
// re-checked its condition since, and so may sleep at once.
type LocalWaiter interface {
	WaitArm(r Region, off, n int) (seq uint32, watch int)
	WaitChange(seq uint32, max time.Duration) uint32
	WaitDisarm(watch int)
}

// WaitPoker is implemented by LocalWaiters whose sleepers a write they do
// not see can wake: WaitPoke moves the sequence and wakes every goroutine
// in WaitChange, as a write to watched bytes would. A composite of two
// transports lets its waiters sleep in one of them, and the other's
// writes poke it (see WaitNotifier), instead of forwarding both.
type WaitPoker interface {
	WaitPoke()
}

// Relayer is implemented by domains whose process carries operations
// between other PEs: it relays them on their way, or lands them in the
// memory of the PEs of its host. Where Relays says so, other PEs'
// operations complete only while this process's goroutines run, so a
// waiter may not hold the process's runtime processor for long even
// when the word it waits for is written through shared memory.
type Relayer interface {
	Relays() bool
}

// InputPender is implemented by domains whose progress goroutines read
// this PE's input from the operating system (sockets): InputPending
// reports, without blocking and without the runtime's system-call hooks,
// whether some waits to be read. It may err towards true.
type InputPender interface {
	InputPending() bool
}

// WaitYielder is implemented by LocalWaiters that can give up their CPU
// for a while before they sleep, without letting this process's other
// goroutines run, as long as nothing else needs them: after
// SetWaitYield(busy), a waiter yields only while busy reports false (a
// composite passes its other transport's InputPending), and sleeps once
// it reports true. nil removes it. Set it before the first WaitArm.
type WaitYielder interface {
	SetWaitYield(busy func() bool)
}

// WaitNotifier is implemented by LocalWaiters that can tell another waiter
// of their changes: after SetWaitNotify(f), every move of the sequence
// that an armed waiter would wake for also calls f, on the goroutine that
// made the write, after the write and before it wakes anyone. f must not
// block; nil removes it. Set it before the first WaitArm.
type WaitNotifier interface {
	SetWaitNotify(f func())
}
