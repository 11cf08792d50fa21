package core

// Barrierer is implemented by domains that have a barrier of their own,
// carried by the transport's signalling rather than by RMA: a ring of
// doorbells, a hardware collective. Barrier returns once every PE of the
// domain has called it; it is collective and, like OpenSHMEM's sync_all,
// completes nothing: callers that need their operations complete quiet
// their endpoints first. A PE calls it from one goroutine at a time.
type Barrierer interface {
	Barrier() error
}
