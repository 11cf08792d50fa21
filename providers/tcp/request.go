package tcp

import (
	"io"
	"sync"

	"github.com/goshmem/goshmem/providers/provkit"
)

// request is an operation that waits for a reply: its payload is read
// straight into dst.
type request struct {
	id  uint64
	dst []byte
	val [8]byte
	ch  chan struct{} // blocking requests: signalled once, when done
	err error
	ep  *endpoint // non-blocking requests: completed there
	seq uint64    // non-blocking requests: the number on ep's counter
	nbi bool
	// A blocked get's reply is nblk blocks of bsize bytes, placed in dst
	// stride bytes apart (endpoint.GetBlocks); nblk is 0 otherwise.
	nblk, bsize, stride int
}

// want is how many bytes the reply to r carries.
func (r *request) want() int {
	if r.nblk > 0 {
		return r.nblk * r.bsize
	}
	return len(r.dst)
}

// read reads the reply's payload from rd into r's buffer: a blocked
// get's block by block into place.
func (r *request) read(rd io.Reader) error {
	if r.nblk == 0 {
		return readPayload(rd, r.dst)
	}
	for i := range r.nblk {
		if err := readPayload(rd, r.dst[i*r.stride:][:r.bsize]); err != nil {
			return err
		}
	}
	return nil
}

// requestTable is a connection's outstanding requests, by slot, and a
// pool of spent ones. Its lock is a leaf: held only inside its methods,
// which call nothing that locks.
type requestTable struct {
	peer int

	mu   sync.Mutex
	err  error // set by fail: no request may be added
	reqs []*request
	free []uint32
	pool []*request
	gen  uint32
}

// add registers a request for a reply of len(dst) bytes (or, with dst
// nil, of a value into r.val). After it succeeds, the request ends exactly
// once: by its reply or by the table's failure. A non-blocking request is
// issued on ep's counter, numbered before the table's failure can end it.
func (t *requestTable) add(dst []byte, ep *endpoint, nbi bool) (*request, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return nil, t.err
	}
	var r *request
	if n := len(t.pool); n > 0 {
		r, t.pool = t.pool[n-1], t.pool[:n-1]
	} else {
		r = &request{ch: make(chan struct{}, 1)}
	}
	var slot uint32
	if n := len(t.free); n > 0 {
		slot, t.free = t.free[n-1], t.free[:n-1]
	} else {
		slot = uint32(len(t.reqs))
		t.reqs = append(t.reqs, nil)
	}
	t.gen++
	r.id = uint64(t.gen)<<32 | uint64(slot)
	r.dst, r.ep, r.nbi, r.err, r.seq = dst, ep, nbi, nil, 0
	r.nblk, r.bsize, r.stride = 0, 0, 0
	if nbi && ep != nil {
		r.seq = ep.counter.Issue(1)
	}
	if dst == nil {
		r.dst = r.val[:]
	}
	t.reqs[slot] = r
	return r, nil
}

// take removes the request with id from the table, or returns nil if no
// such request is outstanding.
func (t *requestTable) take(id uint64) *request {
	t.mu.Lock()
	defer t.mu.Unlock()
	slot := uint32(id)
	if int(slot) >= len(t.reqs) || t.reqs[slot] == nil || t.reqs[slot].id != id {
		return nil
	}
	r := t.reqs[slot]
	t.reqs[slot] = nil
	t.free = append(t.free, slot)
	return r
}

// fail refuses every later request with err and empties the table: it
// returns the outstanding requests, for the caller to finish.
func (t *requestTable) fail(err error) []*request {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.err = err
	var ended []*request
	for i, r := range t.reqs {
		if r != nil {
			ended = append(ended, r)
			t.reqs[i] = nil
		}
	}
	return ended
}

// generation is the number the table gave its last request: requests
// added later have a larger one (modulo 2^32).
func (t *requestTable) generation() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// pendingNBI says whether a non-blocking request of ep added up to
// generation gen still waits for its reply.
func (t *requestTable) pendingNBI(ep *endpoint, gen uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.reqs {
		if r != nil && r.nbi && r.ep == ep && int32(uint32(r.id>>32)-gen) <= 0 {
			return true
		}
	}
	return false
}

// outstanding counts the requests waiting for a reply.
func (t *requestTable) outstanding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, r := range t.reqs {
		if r != nil {
			n++
		}
	}
	return n
}

// finish ends a request taken from the table: a blocking one's issuer is
// woken, a non-blocking one is completed on its endpoint's counter.
func (t *requestTable) finish(r *request, err error) {
	if !r.nbi {
		r.err = err
		r.ch <- struct{}{}
		return
	}
	if err != nil {
		r.ep.fail(provkit.Err(Name, "get-nbi", t.peer, err), r.seq, 1)
	} else {
		r.ep.complete(r.seq, 1)
	}
	t.release(r)
}

// release returns a spent request to the pool.
func (t *requestTable) release(r *request) {
	r.dst, r.ep, r.err = nil, nil, nil
	t.mu.Lock()
	t.pool = append(t.pool, r)
	t.mu.Unlock()
}
