// Package loopback is the provider "loopback": PEs that are processes on
// one host (or goroutines of one process, as in tests) map each other's
// symmetric memory, so a put is a copy into the target's memory, a get a
// copy out of it, and an atomic is sync/atomic on the target's word, as
// OpenSHMEM implementations do within a node. Nothing is ever in flight:
// every operation is complete when its call returns, and the provider
// starts no goroutine.
//
// Import it for its side effect (or import providers/all); it registers
// itself with core.Register.
//
// # Files
//
// A job keeps its files in core.JobDir (GOSHMEM_SHM_DIR, else /dev/shm,
// else the temporary directory, then "goshmem-<job id>"), created 0700.
// Each PE creates its own files there, mode 0600 and O_EXCL, named
//
//	pe<rank>-<domain id>.ctl   its control file (ctlSize bytes, see ctl.go)
//	pe<rank>-<domain id>.r<n>  its part of symmetric region n
//
// where the domain id is a random number PE 0 draws in Open, so that two
// domains of one job never contend for a name. Creating a set of files
// takes three collective steps, each ended by core.Agree so that a
// failure on one PE is an error on every PE and none is left waiting:
// every PE creates its file; every PE maps every other PE's file (and
// validates the header of control files: magic, layout version, rank, job
// size, job id hash, domain id); every PE unlinks its own file. The
// mappings outlive the names, so once Open or NewRegion has returned the
// job directory holds nothing, and a crash later leaves nothing behind on
// the tmpfs. The directory itself records the processes that use it
// (core.MakeJobDir); the last domain to close removes it (core.LeaveJobDir),
// and after a crash the next job on the host does (core.SweepJobDirs).
//
// NewRegion is collective: the PEs exchange their sizes first and all
// fail, naming the sizes and PEs, if they differ. A region of size 0 has
// no files. A region's memory is allocated when it is created (fallocate
// of the whole file), so a full /dev/shm is an error wrapping
// core.ErrNoMemory from NewRegion, not a SIGBUS at some later store.
//
// The domain is a core.Committer: NewReservedRegion makes a region whose
// files are sized but not allocated (sys.ReserveShared), and Commit
// allocates the blocks of a range of this PE's file (fallocate of the
// range's pages; pages allocated already cost nothing), so a full
// /dev/shm is Commit's error, wrapping core.ErrNoMemory. The domain keeps
// the file open for that until Close. shmem's heap is such a region:
// each PE commits shmem's own part at start and each block as Malloc
// hands it out, so a job takes of /dev/shm what it allocates, not
// SHMEM_SYMMETRIC_SIZE per PE. NewReservedRegion still refuses, on every
// PE alike, a region whose files could not all be allocated now: before
// the sizes are exchanged each PE compares the PEs' parts together with
// the free space of the job directory's file system (statfs).
//
// Each domain maps every file itself, also when PEs are goroutines of one
// process: a domain's memory is reached only through its own mappings.
//
// RegisterRegion makes memory the program already has a region: this PE's
// file of it is made from that memory in place (sys.ShareInPlace: the file
// gets the memory's contents and its mapping replaces the memory at the
// same address), and the peers map it as any region's file.
//
// # Lifetimes and ownership
//
// The domain owns every mapping: its own files and its views of every
// peer's. Domain.Close, which is collective, marks the domain and its
// endpoints closed, waits at a bootstrap barrier until every PE is done
// with the job's memory, then retires all of them (sys.Retire: private
// zeroed memory at the same addresses, see core.Domain's Close), returning
// the errors joined; all but this PE's part of a registered region, which
// is the program's memory: that becomes private memory again, in place and
// with its contents (sys.Unshare), and stays the program's. Retiring
// affects only this process's views, so a slow peer never faults on
// memory this PE let go, and a slice the program kept reads and writes
// memory nobody shares. Close is idempotent; after it, every endpoint
// operation fails with an error wrapping core.ErrClosed and Region.Local
// and PeerBytes return nil. Calls that race Close from other goroutines
// are a program error, just as OpenSHMEM forbids communication concurrent
// with shmem_finalize.
//
// The Bootstrap belongs to the caller; the provider never closes it.
//
// # Waiting
//
// The domain implements core.LocalWaiter with words in the owner's control
// file: a count of armed waiters, a sequence number and a count of
// sleepers. Every put and atomic that lands in PE X's memory loads X's
// waiter count (one load of a cache line that nobody writes while nobody
// arms) and, if it is not zero, increments X's sequence number and, if a
// waiter sleeps in the kernel, wakes it with a shared futex (shared
// because wakers live in other processes). Its caller has spun already,
// as the job's core.Waiting says, so WaitChange does not spin again: it
// yields the CPU a few times, then sleeps on the futex for at most max. A put and an arming waiter that meet must not both miss the
// other (see notify). By default (GOSHMEM_LOOPBACK_FENCE=auto) the waiter
// pays: before its first sleep WaitChange runs membarrier(2), a barrier on
// every CPU running a PE, and returns once so that its caller re-checks;
// puts then need no fence at all. Where membarrier is missing (or a PE
// cannot register for it, or the hardware reorders stores), or with
// GOSHMEM_LOOPBACK_FENCE=atomic, every operation's atomic count is the
// fence instead. Either way an endpoint operation never misses a waiter
// that armed at the same moment; stores through PeerBytes do not notify,
// and are seen within max.
//
// With GOSHMEM_LOOPBACK_WAKE=poller (or auto, what the composite with
// tcp sets, in a process with GOMAXPROCS=1) a waiter does not yield, and
// sleeps in the Go runtime's network poller instead of on the futex: on
// a FIFO of its own, made in the job directory at Open and unlinked once
// every PE has opened every PE's. It counts itself in its control file's pollers word, re-checks,
// and reads the pipe with a deadline; a waker, after moving seq, writes
// one byte to the pipe if pollers is not zero. One poll then hears a
// same-host store and a socket's frame alike, and with one runtime
// processor no yield loop keeps the scheduler from polling (wake.go).
//
// PROTOCOL.md in this directory writes the control words and both sides'
// duties down, so that code outside the provider can follow them too: the
// domain offers its words and mappings through core.SharedMap, and the C
// library's fast path moves data with them, waking Go waiters and woken
// by Go writers.
//
// # Barrier
//
// The domain implements core.CheckedBarrierer (see barrier.go). When every
// PE has a CPU of its own (GOSHMEM_CPUS, set by oshrun) it is a
// dissemination barrier over flags in the PEs' control files: each round
// one store to another PE's line, crossing between CPUs at once. Else it
// is a counter and a generation in PE 0's control file: one atomic add per
// PE, and the last to arrive bumps the generation and wakes sleepers with
// one futex wake, the fewest hand-overs of a CPU that PEs share. Waiters
// spin (GOSHMEM_LOOPBACK_SPIN polls, by default the job's core.Waiting),
// yield and then sleep like WaitChange, and end the wait with an
// error when a PE is lost, the domain is closed or the caller's check
// fails.
//
// # Ordering and counting
//
// Every endpoint operation ends by counting itself on a word of the
// endpoint's own. Where puts fence, that count is an atomic add, a full
// memory barrier; where waiters pay, stores stay in order because the
// machine keeps them so (amd64's total store order), and an endpoint of
// one goroutine counts with a plain increment. So operations take effect
// in issue order (Info's OrderPutPut and OrderAtomicAtomic, on every
// architecture). Fence and Quiet are one full barrier. The count moves
// into the endpoint's core.Counter when Endpoint.Counter or Close is
// called (see endpoint).
//
// # Operations without checks
//
// Prechecked (prechecked.go) is an endpoint's operations without their checks,
// for an endpoint in front of loopback's that checks every operation
// itself, as providers/hybrid's composite does for the PEs of its host:
// the same stores, counts and wake-ups as the endpoint's own, so its
// counter, Fence, Quiet and the waiters see no difference. It is not part
// of core's contract; its caller takes on every check listed there.
package loopback
