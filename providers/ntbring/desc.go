package ntbring

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

// A descriptor announces one transfer in a ring of the ring protocol. It
// lives in the receiver's window, written by the sender with posted
// stores, and is read by the receiver once the producer index covers it.
// On the wire, eight 32-bit words:
//
//	word 0: the entry's index in the ring (counts every entry ever sent)
//	word 1: kind (8 bits) | source host (8) | destination host (8) | region (8)
//	        (for a link notice or a link-down notice, the side instead of
//	        the region; zero for a barrier signal)
//	word 2: offset in the region (for a barrier signal, its round; for a
//	        cut notice, the entries taken; zero for a repair notice; for
//	        a link-down notice, the host whose side the link is on)
//	word 3: size: the payload's bytes in the entry's data slot; for a
//	        landed notice, the bytes that landed in the region
//	word 4: tag (matches an answer to its request; 0 for none)
//	word 5: the sender's epoch, from its link-up hello
//	word 6: the destination PE's index on its host (0 with one PE per
//	        host, as before: the word was reserved and zero)
//	word 7: a check of words 0-6
//
// The index and the epoch make a stale entry, or one a restarted
// neighbour's predecessor left, fail validation; the check catches torn
// or garbage words.
const (
	descWords = 8
	descSize  = descWords * 4
)

// descLimits is what a receiver checks a descriptor against.
type descLimits struct {
	index    uint32 // the index the entry must carry
	epoch    uint32 // the sender's epoch
	self     int
	hosts    int
	lanes    int // PEs per host: word 6 must be below it (0 counts as 1)
	slotSize int
	// width is the fabric's rows' if it is a torus (topology); 0 for a
	// ring of hosts.
	width int
}

// topo is the fabric the limits are of.
func (lim *descLimits) topo() topology { return topology{hosts: lim.hosts, width: lim.width} }

// descCheck mixes words 0-6 so that no single word, and no word swapped
// for another, keeps the check.
func descCheck(w *[descWords]uint32) uint32 {
	h := uint32(0x9E3779B9)
	for i := range descWords - 1 {
		h ^= w[i] + uint32(i)*0x85EBCA6B
		h = (h << 13) | (h >> 19)
		h *= 0xC2B2AE35
	}
	return h
}

func (m *meta) encodeDesc(index, epoch uint32) [descWords]uint32 {
	low, w2 := m.region, m.off
	switch {
	case m.kind == kindBarrier:
		low, w2 = 0, uint32(m.round)
	case m.kind.isLinkNotice():
		low, w2 = uint8(m.side), m.taken
	case m.kind == kindLinkDown:
		low, w2 = uint8(m.side), uint32(m.linkHost)
	}
	w := [descWords]uint32{
		index,
		uint32(m.kind)<<24 | uint32(m.src)<<16 | uint32(m.dst)<<8 | uint32(low),
		w2, m.size, m.tag, epoch, uint32(m.dpe), 0,
	}
	w[7] = descCheck(&w)
	return w
}

// payloadLen is how many bytes of the entry's data slot m uses.
func (m *meta) payloadLen() int {
	if m.kind == kindLanded || m.kind == kindBarrier || m.kind.isLinkNotice() || m.kind == kindLinkDown {
		return 0
	}
	return int(m.size)
}

// decodeDesc checks descriptor words written by a neighbour. Region and
// offset are checked later against the region table by whoever uses them.
func decodeDesc(w [descWords]uint32, lim descLimits) (meta, error) {
	m := meta{kind: kind(w[1] >> 24), src: uint8(w[1] >> 16), dst: uint8(w[1] >> 8), size: w[3], tag: w[4], dpe: uint8(w[6])}
	low, w2 := uint8(w[1]), w[2]
	switch {
	case m.kind == kindBarrier:
		m.round = uint8(w2)
	case m.kind.isLinkNotice():
		m.side, m.taken = ntb.Side(low), w2
	case m.kind == kindLinkDown:
		m.side, m.linkHost = ntb.Side(low), uint8(w2)
	default:
		m.region, m.off = low, w2
	}
	bad := func(format string, args ...any) (meta, error) {
		return meta{}, fmt.Errorf("%w: descriptor "+format, append([]any{errBadMeta}, args...)...)
	}
	switch {
	case w[7] != descCheck(&w):
		return bad("check %#x, the words give %#x", w[7], descCheck(&w))
	case w[0] != lim.index:
		return bad("index %d where %d was due", w[0], lim.index)
	case w[5] != lim.epoch:
		return bad("epoch %#x, the neighbour's is %#x (a stale entry, or from a host that restarted)", w[5], lim.epoch)
	case w[6] != 0 && w[6] >= uint32(max(lim.lanes, 1)):
		return bad("destination PE %d on its host, which runs %d", w[6], max(lim.lanes, 1))
	case m.kind == 0 || m.kind >= kindEnd:
		return bad("kind %d (allowed 1 to %d)", m.kind, kindEnd-1)
	case int(m.src) >= lim.hosts || int(m.dst) >= lim.hosts:
		return bad("hosts %d -> %d in a ring of %d", m.src, m.dst, lim.hosts)
	case m.src == m.dst:
		return bad("host %d sends to itself across the ring", m.src)
	case m.payloadLen() > lim.slotSize:
		return bad("size %d over the slot size %d", m.size, lim.slotSize)
	case m.kind == kindBarrier && (m.size != 0 || w2 >= maxRounds || low != 0):
		return bad("barrier signal of round %d (allowed 0 to %d) with %d bytes, region byte %d", w2, maxRounds-1, m.size, low)
	case m.kind == kindLanded && m.size == 0:
		return bad("landed notice of no bytes")
	case m.kind.isLinkNotice() && (!lim.topo().validSide(ntb.Side(low)) || lim.topo().neighbour(int(m.src), ntb.Side(low)) != int(m.dst)):
		return bad("%s notice of host %d's side %d, which does not face host %d", m.kind, m.src, low, m.dst)
	case m.kind == kindLinkDown && (!lim.topo().torus() || !lim.topo().validSide(ntb.Side(low)) || w2 >= uint32(lim.hosts) || !adjacent(lim.topo(), int(m.src), int(m.dst))):
		return bad("link-down notice of host %d's side %d from host %d to host %d, on a %s", w2, low, m.src, m.dst, lim.topo())
	case m.kind == kindRepair && w2 != 0:
		return bad("repair notice with %d in the offset word, which it does not use", w2)
	}
	if want, ok := fixedPayload[m.kind]; ok && int(m.size) != want {
		return bad("%s with a payload of %d bytes (want %d)", m.kind, m.size, want)
	}
	return m, nil
}

// descAt returns the i-th descriptor's words in area b.
func descAt(b []byte, i int) *[descWords]uint32 {
	return (*[descWords]uint32)(mem.Slice[uint32](b[i*descSize : (i+1)*descSize]))
}

// storeDesc writes w with atomic stores: the sender's posted writes.
func storeDesc(d *[descWords]uint32, w *[descWords]uint32) {
	for i := range w {
		atomic.StoreUint32(&d[i], w[i])
	}
}

// loadDesc reads a descriptor with atomic loads.
func loadDesc(d *[descWords]uint32) (w [descWords]uint32) {
	for i := range w {
		w[i] = atomic.LoadUint32(&d[i])
	}
	return w
}

// adjacent reports whether hosts a and b are neighbours in t.
func adjacent(t topology, a, b int) bool {
	for _, s := range t.sides() {
		if t.neighbour(a, s) == b {
			return true
		}
	}
	return false
}
