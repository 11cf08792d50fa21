package shmem

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
)

// Host-aware reductions larger than the tree carries, on a team with a
// host shape (coll_hosts.go). Inside a host the leader maps
// its peers' memory, so it reads their data instead of being sent it;
// between hosts only the hosts' leaders talk, and each sends its host's
// partial result once to every other leader. A piece of the data goes:
//
//  1. Every PE but the leader copies its piece into its stage and adds one
//     to its leader's count.
//  2. The leader combines its host's pieces, in place order, out of its
//     peers' stages into its inbox slot for its own host, and puts that
//     partial into the same slot of every other host's leader.
//  3. Once it holds every host's partial, the leader combines them in host
//     order, writes the result into its stage and tells its peers, which
//     copy it out of the leader's memory.
//
// Each host's partial is combined once, and every leader combines the
// same partials in the same order, so every member gets the same bits,
// floating-point sums included. What crosses between hosts is each host's
// partial, once per other host, in one step; the flat reduce-scatter and
// allgather take two, and send every PE's blocks to every PE of the other
// hosts.
//
// Two ways that share the work out more measured slower over tcp on
// namespaced hosts whose PEs outnumber the CPUs, alternating in one run
// (medians in µs): a reduce-scatter inside each host, each PE combining a
// slice out of its peers' memory, then over the hosts' partials out of its
// leader's inbox, and an allgather inside the host (9 rounds; 3 x 2:
// 761 against 610 at 8 KiB, 807 against 740 at 64 KiB; 2 x 2: 506 against
// 194, 401 against 337), which waits five times a piece where this waits
// three; and, on top of that, each PE sending its partial slice to its
// counterparts on the other hosts instead of the leaders (7 rounds, 64
// KiB: 3 x 2 1191 against 910 for the leaders, slower in every round;
// 2 x 2 443 against 433), each message waking a process on another host.
// On hosts with more cores than PEs and large data, the reduce-scatter's
// shared combining may pay; not measured here.
//
// Each of a PE's words is counted or written by generation, the pieces
// ever moved on the team, and the stage and inbox come in two banks by
// generation parity. A PE writes into bank g%2 for piece g+2 only after
// it finished piece g+1. For a PE other than the leader, that took the
// leader's word that g+1 was done, sent after it had read piece g+1 (and
// so g) out of every peer's stage. For a leader, it took every peer's
// count for g+2, each sent after that peer had copied the result of g+1
// (and so of g) out of the leader's stage. A leader's inbox of bank g%2 is
// written for piece g+2 by a leader that finished g+1, which took this
// host's partial of g+1, sent once this leader had finished g.
//
// The words are at the start of the team slot's message banks, which a
// team with a host shape over at most hostRedHosts hosts uses for nothing
// else (its large reductions never take recursive doubling). The data
// follows them on teams other than the World's, and is the World's bulk
// banks there (such a World never takes bulkReduce), where 64 KiB make
// one piece; a team slot's piece holds about 2 KiB at 3 hosts.
//
// Over tcp on namespaced hosts, 5 rounds alternating with the flat paths
// with the intra-host part on (medians in µs): the World at 64 KiB, 3 x 2
// 468 against 1765 for bulkReduce, 2 x 2 268 against 717; a team of
// ranks 0 to 4 of 3 x 2, 483 against 537 for recursive doubling at 2 KiB
// and 13385 against 15642 at 64 KiB, in pieces of its slot. (With the
// reduce-scatter above, that team measured 579 against 563 and 18646
// against 17622, and the World 650 against 1834 at 2 KiB and 614 against
// 1957 at 8 KiB, 2 x 2 261 against 795 and 268 against 754.)
const (
	hrGenOff    = 0                       // pieces moved, ever; this PE's own count
	hrStagedOff = hrGenOff + cacheLine    // leader: host peers' stages written
	hrReadyOff  = hrStagedOff + cacheLine // the last generation whose result is in the leader's stage
	hrFlagsOff  = hrReadyOff + cacheLine  // leader: one line per host, the generation of its partial
	hrWordsEnd  = hrFlagsOff + hostRedHosts*cacheLine

	// hostRedHosts is the most hosts a team may span for its large
	// reductions to go by host: every leader keeps an inbox slot for each
	// host's partial and sends its own to each of the others, (hosts-1)
	// times the data from each host, where bulkReduce sends about twice
	// the data from each PE; measured only up to 3 hosts.
	hostRedHosts = 8
)

func init() {
	if (teamSlotSize-slotBanksOff-hrWordsEnd)/2/(hostRedHosts+1) < 2*cacheLine {
		panic("shmem: host-aware reductions overflow a team slot")
	}
}

// hostReduceFits reports whether a reduction too large for the tree goes
// by host on the team.
func (t *Team) hostReduceFits() bool {
	return t.shape != nil && len(t.shape.hosts) <= hostRedHosts && t.w.direct != nil
}

// hostRedArea returns the heap offset and size of the data area of the
// team's host-aware reductions.
func (t *Team) hostRedArea() (off, size int) {
	if t == t.w.coll.world {
		return bulkBanks, bulkOff + bulkSize - bulkBanks
	}
	off = t.base() + slotBanksOff + hrWordsEnd
	return off, t.base() + teamSlotSize - off
}

// hostReduce all-reduces acc over a team with a host shape, piece after
// piece (see above).
func hostReduce[T Elem](t *Team, acc []T, combine func(acc, in []T)) error {
	if len(acc) == 0 {
		return nil
	}
	s := t.shape
	size := mem.SizeOf[T]()
	data, area := t.hostRedArea()
	bank := area / 2 &^ (cacheLine - 1)
	part := bank / (len(s.hosts) + 1) &^ (cacheLine - 1)
	per := part / size
	for lo := 0; lo < len(acc); lo += per {
		if err := hostReducePiece(t, acc[lo:min(lo+per, len(acc))], combine, data, bank, part); err != nil {
			return err
		}
	}
	return nil
}

// hostReducePiece reduces one piece: the bank of its generation holds this
// PE's stage, then an inbox slot of part bytes per host.
func hostReducePiece[T Elem](t *Team, piece []T, combine func(acc, in []T), data, bank, part int) error {
	s, w := t.shape, t.w
	words := t.base() + slotBanksOff
	gen := atomic.AddUint64(mem.Word64(w.local, words+hrGenOff), 1)
	stage := data + int(gen&1)*bank
	inbox := func(g int) int { return stage + (1+g)*part }
	h, nh := s.hostOf[t.me], len(s.hosts)
	local := s.hosts[h]
	leader := local[0]
	n := len(piece) * mem.SizeOf[T]()
	// at returns the piece-sized run at off in team rank r's memory, which
	// this PE maps.
	at := func(r, off int) []T {
		b := w.local
		if r != t.me {
			b = w.direct.PeerBytes(t.members[r], w.heap)
		}
		return mem.Slice[T](b[off : off+n])
	}

	// 1. Stage, and hear back from the leader.
	if t.me != leader {
		copy(at(t.me, stage), piece)
		if err := t.add(leader, words+hrStagedOff); err != nil {
			return err
		}
		if err := w.waitGE(words+hrReadyOff, gen); err != nil {
			return err
		}
		copy(piece, at(leader, stage))
		return nil
	}
	// 2. The host's partial, to every other leader.
	if err := w.waitGE(words+hrStagedOff, uint64(len(local)-1)*gen); err != nil {
		return err
	}
	own := at(t.me, inbox(h))
	copy(own, piece)
	for _, r := range local[1:] {
		combine(own, at(r, stage))
	}
	ep := w.coll.ep
	for i := 1; i < nh; i++ {
		if err := ep.Put(t.members[s.hosts[(h+i)%nh][0]], w.heap, inbox(h), mem.Bytes(own)); err != nil {
			return err
		}
	}
	if err := ep.Fence(); err != nil {
		return err
	}
	for i := 1; i < nh; i++ {
		if err := t.signal(s.hosts[(h+i)%nh][0], words+hrFlagsOff+h*cacheLine, gen); err != nil {
			return err
		}
	}
	// 3. Every host's partial, in host order, back to the host.
	for i := 1; i < nh; i++ {
		g := (h + i) % nh
		if err := w.waitGE(words+hrFlagsOff+g*cacheLine, gen); err != nil {
			return err
		}
	}
	copy(piece, at(t.me, inbox(0)))
	for g := 1; g < nh; g++ {
		combine(piece, at(t.me, inbox(g)))
	}
	if len(local) == 1 {
		return nil
	}
	copy(at(t.me, stage), piece)
	for _, r := range local[1:] {
		if err := t.signal(r, words+hrReadyOff, gen); err != nil {
			return err
		}
	}
	return nil
}
