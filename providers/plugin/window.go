package plugin

// window is the most operations an endpoint has outstanding on its
// stream (sent, their results not yet received): the stream's flow
// control.
//
// gRPC lets a stream's receiver hold back only so much unread data: the
// receive window (64 KiB to start with) plus as much again queued by the
// sender, after which the sender's Send blocks. The plugin answers every
// operation, and an empty result takes 5 bytes, so a host that only sent
// would leave about 26,000 results unread; the plugin would then block
// answering, stop reading operations, and the host's next Send would
// block for good, the endpoint lost to the timeout.
//
// A host with a full window collects results before it sends again. The
// operations of a full window take under 128 bytes each on the wire, far
// less than the stream holds together, so the host's Send never waits on
// a plugin that is itself waiting for the host; and the host's receive is
// what lets a plugin blocked on its answers go on. TestWindowFitsStream
// checks the bound. 256 is enough that operations streamed back to back
// still overlap with their execution in the plugin.
const window = 256

// queue holds the pending operations in a fixed circular buffer, so
// issuing and collecting never allocate.
type queue struct {
	buf  [window]pending
	head int // index of the oldest
	n    int
}

func (q *queue) push(p pending) {
	q.buf[(q.head+q.n)%window] = p
	q.n++
}

func (q *queue) front() pending { return q.buf[q.head] }

func (q *queue) pop() {
	q.head = (q.head + 1) % window
	q.n--
}

// room collects results while the window is full, down to half of it:
// in a batch, so that a caller streaming operations stops to collect once
// every window/2 of them rather than at each, and the plugin has the
// other half to work on meanwhile. Each receive is bounded by the
// plugin's timeout, so a plugin that stopped answering is an error, not a
// hang. The caller holds mu.
func (e *endpoint) room() error {
	if e.pending.n < window {
		return nil
	}
	for e.pending.n > window/2 {
		if _, err := e.collect(false); err != nil {
			return err
		}
	}
	return nil
}
