package shmem

// HostReduces reports whether the team's reductions larger than the tree
// go by host.
func (t *Team) HostReduces() bool { return t.hostReduceFits() }
