package shmem

// WithCommitHook has f look at every commit of the heap's memory before
// the provider does: a commit f fails is a commit the provider could not
// make, as when /dev/shm is full on this PE.
func WithCommitHook(f func(off, n int) error) Option { return func(o *options) { o.commit = f } }

// InternalSize is the size of shmem's own part of the heap, before the
// program's, committed at start.
const InternalSize = internalSize

// CommitGranule is how much of the heap a block's commit takes at least.
const CommitGranule = commitGranule
