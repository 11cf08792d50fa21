// Package sys is the one package of goshmem that imports golang.org/x/sys.
// It maps shared files, waits and wakes on words of shared memory, and
// yields the CPU: the few system calls a provider that keeps its data in
// memory shared between processes needs. Keeping them here keeps every
// other package portable, safe Go (internal/mem holds the unsafe views of
// the mapped bytes).
//
// # Ownership
//
//   - CreateShared creates a file and maps it. The file's name belongs to
//     the caller, who removes it (os.Remove) when every process that needs
//     it has mapped it; the mapping stays valid after the name is gone.
//     If CreateShared fails, it removes the file it created itself.
//   - OpenShared maps a file another process created; it never removes it.
//   - ShareInPlace moves memory the caller already has (a data segment,
//     say) onto a new shared file, keeping its address and contents;
//     MapSharedAt maps an existing file over such memory. Either mapping
//     belongs to whoever owned the memory before; Unshare turns it back
//     into private memory with the same contents, for memory that must
//     outlive the peers sharing it (it is never unmapped). The file's name
//     belongs to the caller, as with CreateShared.
//   - ReserveShared is CreateShared that allocates the file's blocks
//     only as its Backing's Commit asks, so a large mapping costs the
//     file system only what is committed. The Backing is the one file
//     descriptor the package keeps open; its caller closes it, apart
//     from the mapping, when it commits no more.
//   - No other function keeps a file descriptor: the mapping holds the
//     file, so there is nothing to close.
//   - The caller of CreateShared or OpenShared owns the returned mapping
//     and must Unmap it exactly once, with the very slice it got (not a
//     subslice), after every goroutine has stopped touching it. Touching a
//     mapping after Unmap faults the process; that is why providers guard
//     their data paths with a closed flag.
//   - Memory a provider hands to a program (a region's Local, a peer's
//     part through DirectAccess) may be touched after the provider is
//     done with it, by slices the program kept. It ends with Retire
//     instead of Unmap: the addresses stay mapped, to private zeroed
//     memory, so those accesses reach nothing shared and never fault.
//
// # Alignment
//
// Every mapping starts at an address aligned to Alignment of its size
// (the largest power of two not above it), not merely on a page. A
// symmetric region is one mapping per process, each at its own address;
// this alignment is what lets an aligned offset be an aligned address in
// all of them at once.
//
// # Futexes
//
// FutexWait and FutexWake use shared (not FUTEX_PRIVATE) futexes: the
// kernel keys them by file and offset, so a waiter and a waker in different
// processes, each with its own mapping of the file at its own address,
// meet. The word must lie in a MAP_SHARED mapping from this package, and
// every access to it must go through sync/atomic.
//
// The package is Linux-only in substance. On other systems it compiles,
// and every function reports errors.ErrUnsupported (Yield is a no-op), so
// tools that list providers still build there.
package sys
