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

// CheckedBarrierer is implemented by domains whose barrier its caller can
// end while it waits. BarrierCheck is Barrier, except that while it waits
// it calls check, at least every few milliseconds, and returns check's
// error as soon as check returns one: a layer above learns of failures the
// domain cannot see (a global exit, a finalize) that way. A barrier so
// ended leaves the domain's barrier unusable; the caller gives up on the
// job. check is called from the waiting goroutine only.
type CheckedBarrierer interface {
	Barrierer
	BarrierCheck(check func() error) error
}
