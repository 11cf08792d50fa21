package plugin

// ring hands out extents of an endpoint's staging area. Extents are
// released in the order they were handed out (results arrive in order),
// so the free space is one or two runs, as in a circular buffer: data
// lies in [tail, head), or in [tail, size) and [0, head) once head has
// wrapped. An extent never straddles the end; the bytes skipped there are
// free again once everything before them is released.
type ring struct {
	size       int
	head, tail int
	n          int // extents outstanding
}

// alloc returns the start of a free extent of n bytes (0 < n <= size), or
// false if the outstanding extents leave no room for it.
func (r *ring) alloc(n int) (int, bool) {
	if r.n == 0 {
		r.head, r.tail = 0, 0
	}
	switch {
	case r.head >= r.tail && r.size-r.head >= n:
	case r.head >= r.tail && n < r.tail:
		r.head = 0
	case r.head < r.tail && r.tail-r.head > n:
	default:
		return 0, false
	}
	start := r.head
	r.head += n
	r.n++
	return start, true
}

// release frees the oldest outstanding extent, which ends at end.
func (r *ring) release(end int) {
	r.n--
	r.tail = end
	if r.n == 0 {
		r.head, r.tail = 0, 0
	}
}
