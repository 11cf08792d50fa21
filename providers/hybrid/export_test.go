package hybrid

import "github.com/goshmem/goshmem/core"

// FastPath reports whether ep, a composite endpoint, serves the PEs of
// its host through loopback's operations without checks.
func FastPath(ep core.Endpoint) bool {
	switch e := ep.(type) {
	case *endpoint:
		return e.fast
	case signalEndpoint:
		return e.fast
	}
	return false
}

// JoinsPutSignal reports whether ep, a composite endpoint, carries a
// put-with-signal to another host as one operation of the inter-host
// transport.
func JoinsPutSignal(ep core.Endpoint) bool {
	_, ok := ep.(signalEndpoint)
	return ok
}

// Poked reports whether d, a composite domain, lets its waiters sleep in
// the intra-host transport, which the inter-host one pokes, instead of
// forwarding both transports' changes.
func Poked(d core.Domain) bool {
	h, ok := d.(*domain)
	return ok && h.waiting.poked
}
