package core

// Batcher is implemented by endpoints that can carry a batch of small
// operations in fewer transfers (CapBatch; OpenSHMEM 1.6's sessions with
// SHMEM_CTX_SESSION_BATCH). Between StartBatch and StopBatch the endpoint
// may hold back its small puts, put-with-signals and non-fetching atomics
// so that they leave together, each for a bounded time, so that a peer
// waiting for one is never held up for long; StopBatch sends what it
// holds. Nothing else changes: what Quiet completes, what Fence orders and
// when a call may return are as without a batch. ops is how many
// operations the caller expects in the batch, 0 if it does not say.
// StartBatch during a batch goes on with it; StopBatch without one does
// nothing.
type Batcher interface {
	StartBatch(ops int)
	StopBatch() error
}

// StartBatch starts a batch on ep where ep is a Batcher, and says whether
// it is; elsewhere a batch changes nothing.
func StartBatch(ep Endpoint, ops int) bool {
	b, ok := ep.(Batcher)
	if ok {
		b.StartBatch(ops)
	}
	return ok
}

// StopBatch ends a batch on ep where ep is a Batcher.
func StopBatch(ep Endpoint) error {
	if b, ok := ep.(Batcher); ok {
		return b.StopBatch()
	}
	return nil
}
