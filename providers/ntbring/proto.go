package ntbring

import (
	"time"

	"github.com/goshmem/goshmem/core"
)

// The protocols, as GOSHMEM_NTBRING_PROTOCOL names them.
const (
	protoRing = "ring"
	protoSeed = "seed"
)

// abortPoll is how often a blocked wait consults the domain's failure
// and the bootstrap's view of lost PEs.
const abortPoll = 20 * time.Millisecond

// protocol moves operations between hosts of the ring. The domain, its
// regions, endpoints and pending table are the same for every protocol,
// and so is what a host does with a transfer addressed to it (serve,
// answered); a protocol decides how transfers cross the links and reach
// the host they are for.
type protocol interface {
	// send starts transfer m from this host to host m.dst, with payload
	// (a put's data, a request header). It returns when payload may be
	// reused; the answer finishes the op with tag m.tag.
	send(m meta, payload []byte) error
	// maxPayload is the largest payload of one transfer.
	maxPayload() int
	// barrier returns once every host has entered it, or with abort's
	// error: abort is consulted while it waits.
	barrier(abort func() error) error
	// broken tells the other hosts, as far as the ring still reaches,
	// that it broke and which host was lost, so that none waits for a
	// transfer that cannot come. The domain calls it once, on failure.
	broken(lost int)
	// failed wakes the protocol's waiters, which consult the domain's
	// failure: the domain calls it instead of broken on a failure every
	// host has been told of already.
	failed()
	// close stops the protocol's goroutines and releases the device. The
	// domain calls it after every host has stopped sending.
	close() error
}

// regionExporter is a protocol that places regions in memory of its
// own, so that neighbours can write into them directly. exportRegion
// returns the memory and how to release it, or nil memory to let the
// domain map the region itself.
type regionExporter interface {
	exportRegion(idx, size int) (mem []byte, release func() error, err error)
}

// directPutter is a protocol that can complete some puts without the
// ring: it reports whether it handled the put, and its error.
type directPutter interface {
	putDirect(pe, j int, reg *region, off int, src []byte) (bool, error)
}

// valuePutter is a protocol that can complete some PutValues without the
// ring, as putDirect does puts: v is passed by value, so that a PutValue
// that goes this way allocates nothing.
type valuePutter interface {
	putValueDirect(pe, j int, reg *region, off int, v uint64, size int) (bool, error)
}

// asyncPutter is a protocol that can start puts without waiting for
// their data to leave, for non-blocking puts, whose source stays
// unchanged until the endpoint's next quiet.
type asyncPutter interface {
	// putDirectAsync starts a put that putDirect would complete, if it
	// can, and reports whether it did: done is then called once, with
	// redo if the put must go another way (its link went down), without
	// blocking.
	putDirectAsync(pe, j int, reg *region, off int, src []byte, done func(redo bool, err error)) bool
	// putPiecesAsync is putPieces without waiting; fail gets the
	// pieces' errors, and settle must be called once the put is
	// complete or failed, before src changes.
	putPiecesAsync(m meta, src []byte, fail func(error)) (settle func(), err error)
}

// piecePutter is a protocol that sends a put of any size as pieces that
// share one op (one tag), acked piece by piece.
type piecePutter interface {
	// pieces is how many pieces a put of n bytes takes.
	pieces(n int) int
	// putPieces sends them; it returns once src may be reused.
	putPieces(m meta, src []byte) error
}

// newProtocol sets the links up for the protocol s names and starts it.
func newProtocol(d *domain, r *ringPorts, s settings) (protocol, error) {
	switch s.protocol {
	case protoRing:
		p, err := newRingProto(d, r, s)
		if err != nil {
			return nil, err
		}
		d.proto = p
		return p, p.setup()
	case protoSeed:
		p, err := newSeed(d, r, s)
		if err != nil {
			return nil, err
		}
		// The goroutines setup starts may fail the domain, which then
		// alarms the ring through d.proto.
		d.proto = p
		return p, p.setup()
	}
	return nil, &core.EnvError{Var: paramProtocol.Env, Value: s.protocol, Allowed: protocolsAllowed}
}
