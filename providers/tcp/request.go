package tcp

import (
	"github.com/goshmem/goshmem/core"
)

// newRequest registers a request for a reply of len(dst) bytes (or, with
// dst nil, of a value into r.val). After it succeeds, the request ends
// exactly once: by its reply or by the connection's failure. A
// non-blocking request is issued on ep's counter, numbered before the
// connection's failure can end it.
func (c *conn) newRequest(dst []byte, ep *endpoint, nbi bool) (*request, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if e := c.failed.Load(); e != nil {
		return nil, e
	}
	var r *request
	if n := len(c.pool); n > 0 {
		r, c.pool = c.pool[n-1], c.pool[:n-1]
	} else {
		r = &request{ch: make(chan struct{}, 1)}
	}
	var slot uint32
	if n := len(c.free); n > 0 {
		slot, c.free = c.free[n-1], c.free[:n-1]
	} else {
		slot = uint32(len(c.reqs))
		c.reqs = append(c.reqs, nil)
	}
	c.gen++
	r.id = uint64(c.gen)<<32 | uint64(slot)
	r.dst, r.ep, r.nbi, r.err, r.seq = dst, ep, nbi, nil, 0
	if nbi && ep != nil {
		r.seq = ep.counter.Issue(1)
	}
	if dst == nil {
		r.dst = r.val[:]
	}
	c.reqs[slot] = r
	return r, nil
}

// take removes the request with id from the table.
func (c *conn) take(id uint64) *request {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	slot := uint32(id)
	if int(slot) >= len(c.reqs) || c.reqs[slot] == nil || c.reqs[slot].id != id {
		return nil
	}
	r := c.reqs[slot]
	c.reqs[slot] = nil
	c.free = append(c.free, slot)
	return r
}

// finish ends a request taken from the table.
func (c *conn) finish(r *request, err error) {
	if !r.nbi {
		r.err = err
		r.ch <- struct{}{}
		return
	}
	if err != nil {
		r.ep.fail(&core.OpError{Op: "get-nbi", PE: c.peer, Provider: Name, Err: err}, r.seq, 1)
	} else {
		r.ep.complete(r.seq, 1)
	}
	c.release(r)
}

func (c *conn) release(r *request) {
	r.dst, r.ep, r.err = nil, nil, nil
	c.rmu.Lock()
	c.pool = append(c.pool, r)
	c.rmu.Unlock()
}
