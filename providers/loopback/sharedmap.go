package loopback

import "github.com/goshmem/goshmem/core"

// ProtocolName names the shared-memory protocol of PROTOCOL.md, which the
// domain offers through core.SharedMap; its version is the control file's
// layout version, so a user built against another layout refuses the map.
const (
	ProtocolName    = "goshmem-loopback"
	ProtocolVersion = ctlVersion
)

var _ core.SharedMap = (*domain)(nil)

// SharedProtocol implements core.SharedMap. A domain whose waiters sleep
// in the poller names another protocol, which no user knows: its writers
// must also poke the wake-up pipes (wake.go), which PROTOCOL.md's do not.
func (d *domain) SharedProtocol() (string, int) {
	if d.pw != nil {
		return ProtocolName + "+poller", ProtocolVersion
	}
	return ProtocolName, ProtocolVersion
}

// ControlWords implements core.SharedMap: pe's control file as mapped here
// (PROTOCOL.md has its layout).
func (d *domain) ControlWords(pe int) []byte {
	if d.closed.Load() || core.CheckPE(pe, d.npes) != nil {
		return nil
	}
	return d.ctl[pe].mem
}

// RegionIndex implements core.SharedMap: the number a watch key carries
// for r (see watchKey).
func (d *domain) RegionIndex(r core.Region) int {
	reg, ok := r.(*region)
	if !ok || reg.dom != d {
		return -1
	}
	return reg.idx
}

// WritersFence implements core.SharedMap: unless the job fences
// asymmetrically, every write must be a full barrier before the writer
// reads the target's waiter count (see notify).
func (d *domain) WritersFence() bool { return !d.asym }
