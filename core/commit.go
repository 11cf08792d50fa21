package core

// Committer is implemented by a Domain whose regions' memory can be
// reserved when a region is made and committed a range at a time as it
// comes into use, as OpenSHMEM implementations treat a symmetric heap: a
// heap of SHMEM_SYMMETRIC_SIZE per PE then costs its host only what the
// program allocates of it, not the whole heap of every PE from the start.
//
// NewRegion's memory is committed whole: once it returns, no store into
// the region faults for want of memory (a full /dev/shm is NewRegion's
// error, not a SIGBUS later). A reserved region keeps that promise only
// for the ranges its owner committed.
type Committer interface {
	// NewReservedRegion is NewRegion (collective, numbered and agreed
	// alike, the same Local and alignment), except that no part of the
	// region is committed yet: every PE commits the ranges of its own
	// part it uses with Commit. It still refuses, on every PE alike and
	// with an error wrapping ErrNoMemory, a region whose parts could not
	// all be committed on this host even now (the sizes against the room
	// the memory comes from), so only a host whose memory fills up later
	// makes a Commit fail.
	//
	// Until a range is committed it reads as zeros, and stores into it
	// (this PE's, or peers' RMA) take memory as they land: while there
	// is room that works, but where there is none the storing process
	// faults, as a store into any memory the system cannot back does.
	NewReservedRegion(size int) (Region, error)

	// Commit commits bytes [off, off+n) of this PE's part of r, widened
	// to whole pages: afterwards no store into them faults for want of
	// memory. It is local, not collective: a caller whose PEs must agree
	// on the outcome (shmem's Malloc) agrees itself. Committing a range
	// committed already, or any range of a region from NewRegion or
	// RegisterRegion, does nothing but succeed. A range outside the
	// region is an error wrapping ErrOutOfBounds, a region of another
	// domain one wrapping ErrInvalid, a closed domain ErrClosed. When the
	// memory is not there, the error wraps ErrNoMemory and says where it
	// ran out; memory committed is never given back before Close.
	Commit(r Region, off, n int) error
}
