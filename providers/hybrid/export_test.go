package hybrid

import "github.com/goshmem/goshmem/core"

// FastPath reports whether ep, a composite endpoint, serves the PEs of
// its host through loopback's operations without checks.
func FastPath(ep core.Endpoint) bool {
	e, ok := ep.(*endpoint)
	return ok && e.fast
}

// JoinsPutSignal reports whether ep, a composite endpoint, carries a
// put-with-signal to another host as one operation of the inter-host
// transport.
func JoinsPutSignal(ep core.Endpoint) bool {
	e, ok := ep.(*endpoint)
	return ok && e.interSignal
}

// Poked reports whether d, a composite domain, lets its waiters sleep in
// the intra-host transport, which the inter-host one pokes, instead of
// forwarding both transports' changes.
func Poked(d core.Domain) bool {
	h, ok := d.(*domain)
	return ok && h.waiting.poked
}
