//go:build !shmemtrace

package shmem

// treeTrace records when this PE passed each phase of a step of the
// combining tree, in builds with the shmemtrace tag (coll_trace_on.go, for
// finding where a barrier's time goes); in other builds it is empty and
// its calls compile to nothing.
type treeTrace struct{}

func (*treeTrace) mark(int)    {}
func (*treeTrace) done(*group) {}
