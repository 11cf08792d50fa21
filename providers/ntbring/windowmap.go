package ntbring

import (
	"github.com/goshmem/goshmem/core"
)

// WindowProtocolName names the protocol of PROTOCOL.md, by which code
// outside the provider puts straight into a neighbour's window; the
// domain offers it through core.WindowMap. WindowProtocolVersion changes
// with any change to the words or to what a side must do.
const (
	WindowProtocolName    = "goshmem-ntbring-direct"
	WindowProtocolVersion = 1
)

var _ core.WindowMap = (*domain)(nil)

// windowProto is the ring protocol, when the domain runs it at one PE per
// host: the only case in which the domain offers its windows (and only
// over links whose words are outside the Go heap: PeerLink).
func (d *domain) windowProto() *ringProto {
	p, ok := d.proto.(*ringProto)
	if !ok || d.lanes > 1 || d.closed.Load() || d.err() != nil {
		return nil
	}
	return p
}

// WindowProtocol implements core.WindowMap: puts of up to pioMax bytes go
// by stores, as putDirect's do.
func (d *domain) WindowProtocol() (string, int, int) {
	return WindowProtocolName, WindowProtocolVersion, pioMax
}

// neighbourLink is the current link to pe if pe is this host's
// neighbour and the link is up, else nil.
func (p *ringProto) neighbourLink(pe int) *rlink {
	if pe < 0 || pe >= p.d.npes || pe == p.d.rank {
		return nil
	}
	side, hops := p.d.topo.hopsTo(p.d.rank, pe)
	if hops != 1 {
		return nil
	}
	l := p.link(side)
	if l.down.Load() {
		return nil
	}
	return l
}

// PeerWindow implements core.WindowMap: the neighbour's window onto its
// part of r, where it has one and the whole region fits in it.
func (d *domain) PeerWindow(pe int, r core.Region) []byte {
	p := d.windowProto()
	if p == nil {
		return nil
	}
	reg, ok := r.(*region)
	if !ok || reg.dom != d {
		return nil
	}
	l := p.neighbourLink(pe)
	if l == nil {
		return nil
	}
	win := p.regionWindow(l, uint8(reg.idx), 0)
	if len(win) < reg.size {
		return nil
	}
	return win[:reg.size:reg.size]
}

// PeerLink implements core.WindowMap: the words of the link to the
// neighbour pe (wordUp, wordNotice) and the word of this end's ring
// window in which the neighbour acknowledges landed notices (offLanded).
func (d *domain) PeerLink(pe int) (words, acked []byte) {
	p := d.windowProto()
	if p == nil {
		return nil, nil
	}
	l := p.neighbourLink(pe)
	if l == nil || !l.wordsShared || len(l.in) < offLanded+4 {
		return nil, nil
	}
	return l.words[:wordsSize:wordsSize], l.in[offLanded : offLanded+4 : offLanded+4]
}

// WindowLanded implements core.WindowMap: what landedDirect does after a
// put's stores, for stores made outside the provider. The caller's stores
// are before this call; the link is looked up again, so a link that was
// cut since is seen as down and the put is to be done again.
func (d *domain) WindowLanded(pe int, r core.Region, off, n int) (bool, error) {
	p, ok := d.proto.(*ringProto)
	if !ok || d.lanes > 1 {
		return false, nil
	}
	reg, ok := r.(*region)
	if !ok || reg.dom != d || n <= 0 || !core.InBounds(off, n, reg.size) {
		return false, nil
	}
	if err := d.err(); err != nil {
		return true, err
	}
	side, hops := d.topo.hopsTo(d.rank, pe)
	if hops != 1 {
		return false, nil
	}
	l := p.link(side)
	if l.down.Load() {
		return false, nil
	}
	return p.landedDirect(l, pe, 0, reg, off, n)
}
