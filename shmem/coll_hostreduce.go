package shmem

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Host-aware barriers and reductions, on a team with a host shape
// (coll_hosts.go). Inside a host every PE maps its peers' memory, so the
// host's partial is read out of their stages instead of being sent; between
// hosts one message per other host carries it, straight to that host's
// leader. A piece of the data goes:
//
//  1. Every PE copies its piece into its stage and adds one to its
//     leader's count, fetching the count.
//  2. The PE whose add completed the count, the host's last to arrive,
//     combines its host's pieces, in place order, out of the stages into
//     its leader's inbox slot for this host, and puts that partial into
//     the same slot of every other host's leader; then it tells each
//     leader, its own included, that the partial is there.
//  3. Once it holds every host's partial, the leader combines them in host
//     order, writes the result into its stage and tells its peers, which
//     copy it out of the leader's memory.
//
// A barrier is a piece of no data (hostBarrier): the counts and words
// alone. Where the combining tree crosses between hosts twice, up to the
// root's host and back down, and waits for the host's PEs on the way up
// and to release them on the way down, a step here crosses once, from
// whichever PE of each host comes last, which sends at once rather than
// wake a leader to send for it.
//
// On more than two hosts, a piece the tree would carry (barriers and
// reductions of up to treeChunk bytes) is rooted: the last PE to arrive
// on each host sends its partial to host 0's leader alone, which combines
// them and puts the result into every other leader's slot for host 0
// (step 3 for the others is to wait for it). That is two crossings, as in
// the tree, but 2*(nh-1) messages where sending to every leader takes
// nh*(nh-1), each a wake-up of another process, and no leader waits for
// its host's PEs before it sends. Larger pieces go to every leader, one
// step, where the data's time on the wire outweighs the wake-ups.
//
// Over tcp on namespaced hosts whose PEs outnumber the CPUs, alternating
// in one run (3 rounds, medians in µs, at the oshrun's GOMAXPROCS of 1 and
// at the default): 2 x 2 barrier 223 and 230 against 237 and 324 for the
// tree, 8-byte sum-reduce 219 and 206 against 279 and 306; 3 x 2, rooted,
// barrier 441 and 551 against 470 and 573, sum-reduce 484 and 552 against
// 479 and 592. Sending every piece to every leader measured no faster on
// 3 x 2 than the tree (barrier 496 and 560 against 456 and 576), and the
// last to arrive sending its partial to every PE of the other hosts, each
// then waiting for every host's word in its own memory with no leader in
// between, slower on 2 x 2 (barrier 432 against 310, sum-reduce 342
// against 263), each message a wake-up of another process.
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
// ever moved on the team, and the stage, inbox and leader's words for the
// hosts' partials come in two banks by generation parity. A PE writes into
// bank g%2 for piece g+2 only after it finished piece g+1, which took its
// leader's word that g+1 was done (or, for the leader, its own host's
// partial of g+1), sent after every PE of the host had arrived at g+1;
// so the reads of piece g out of its stage, by the host's last to arrive
// at g and, for the result, by its peers, were over. A leader's inbox and
// word of bank g%2 are written for piece g+2 by the last PE to arrive on a
// host whose PEs finished g+1, which took this host's partial of g+1, sent
// once this leader had finished g. In a rooted piece, host 0's leader
// writes another leader's slot and word for host 0 for piece g+2 once it
// holds every host's partial of g+2, that leader's host's included, sent
// once that leader had finished g+1. The words for the partials are by bank
// because the last to arrive on a host changes from piece to piece, and
// two PEs' words of consecutive pieces may land in either order.
//
// The words are at the start of the team slot's message banks, which a
// team with a host shape over at most hostRedHosts hosts uses for nothing
// else (its reductions never take recursive doubling). The data
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
	hrStagedOff = hrGenOff + cacheLine    // leader: the host's stages written, its own included
	hrReadyOff  = hrStagedOff + cacheLine // the last generation whose result is in the leader's stage
	hrFlagsOff  = hrReadyOff + cacheLine  // leader: two banks of one line per host, the generation of its partial
	hrWordsEnd  = hrFlagsOff + 2*hostRedHosts*cacheLine

	// hostRedHosts is the most hosts a team may span for its reductions
	// and barriers to go by host: every leader keeps an inbox slot for each
	// host's partial, and each host's partial of a large piece goes to
	// each of the others, (hosts-1) times the data from each host, where
	// bulkReduce sends about twice the data from each PE; measured only up
	// to 3 hosts.
	hostRedHosts = 8
)

func init() {
	if (teamSlotSize-slotBanksOff-hrWordsEnd)/2/(hostRedHosts+1) < 2*cacheLine {
		panic("shmem: host-aware reductions overflow a team slot")
	}
}

// hostReduceFits reports whether the team's barriers and reductions go by
// host.
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

// hostRedBanks returns the heap offset of the host-aware reductions' data
// area, the size of each of its two banks, and of each part of a bank:
// this PE's stage, then an inbox slot per host.
func (t *Team) hostRedBanks() (data, bank, part int) {
	data, area := t.hostRedArea()
	bank = area / 2 &^ (cacheLine - 1)
	part = bank / (len(t.shape.hosts) + 1) &^ (cacheLine - 1)
	return data, bank, part
}

// hostRooted reports whether a piece of n bytes goes by host 0's leader
// (see above): one the tree would carry, on more than two hosts.
func (t *Team) hostRooted(n int) bool { return len(t.shape.hosts) > 2 && n <= treeChunk }

// hostBarrier is the barrier of a team with a host shape: a reduction of
// nothing.
func hostBarrier(t *Team) error {
	data, bank, part := t.hostRedBanks()
	return hostReducePiece[byte](t, nil, nil, data, bank, part, t.hostRooted(0))
}

// hostReduce all-reduces acc over a team with a host shape, piece after
// piece (see above).
func hostReduce[T Elem](t *Team, acc []T, combine func(acc, in []T)) error {
	if len(acc) == 0 {
		return nil
	}
	data, bank, part := t.hostRedBanks()
	per := part / mem.SizeOf[T]()
	rooted := t.hostRooted(len(mem.Bytes(acc)))
	for lo := 0; lo < len(acc); lo += per {
		if err := hostReducePiece(t, acc[lo:min(lo+per, len(acc))], combine, data, bank, part, rooted); err != nil {
			return err
		}
	}
	return nil
}

// hostReducePiece reduces one piece: the bank of its generation holds this
// PE's stage, then an inbox slot of part bytes per host. An empty piece is
// a barrier (hostBarrier).
func hostReducePiece[T Elem](t *Team, piece []T, combine func(acc, in []T), data, bank, part int, rooted bool) error {
	s, w := t.shape, t.w
	words := t.base() + slotBanksOff
	gen := atomic.AddUint64(mem.Word64(w.local, words+hrGenOff), 1)
	stage := data + int(gen&1)*bank
	inbox := func(g int) int { return stage + (1+g)*part }
	flag := func(g int) int { return words + hrFlagsOff + (int(gen&1)*hostRedHosts+g)*cacheLine }
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
	// gathers reports whether host g's leader gathers every host's
	// partial: every leader's, or, rooted, host 0's alone.
	gathers := func(g int) bool { return !rooted || g == 0 }
	ep := w.coll.ep

	// 1. Stage, and count in at the leader; the last to count sends.
	copy(at(t.me, stage), piece)
	staged, err := ep.FetchAtomic(t.members[leader], w.heap, words+hrStagedOff, core.AtomicAdd, core.Uint64, 1, 0)
	if err != nil {
		return err
	}
	if staged+1 == uint64(len(local))*gen {
		// 2. The host's partial, into the inbox slot for this host of
		// every leader that gathers: the other hosts' first, whose way
		// is longer.
		var own []T
		if n > 0 {
			own = at(leader, inbox(h))
			copy(own, at(leader, stage))
			for _, r := range local[1:] {
				combine(own, at(r, stage))
			}
		}
		if err := t.toOtherLeaders(h, gathers, inbox(h), mem.Bytes(own), flag(h), gen); err != nil {
			return err
		}
		if gathers(h) {
			if err := t.signal(leader, flag(h), gen); err != nil {
				return err
			}
		}
	}
	if t.me != leader {
		// 4. The result, out of the leader's stage.
		if err := w.waitHostGE(t.among(), words+hrReadyOff, gen); err != nil {
			return err
		}
		copy(piece, at(leader, stage))
		return nil
	}
	if gathers(h) {
		// 3. Every host's partial, combined in host order.
		flags := flag(0)
		err = w.waitFor(t.among(), flags, nh*cacheLine, func() bool {
			for g := range nh {
				if atomic.LoadUint64(mem.Word64(w.local, flags+g*cacheLine)) < gen {
					return false
				}
			}
			return true
		})
		if err != nil {
			return err
		}
		if n > 0 {
			copy(piece, at(t.me, inbox(0)))
			for g := 1; g < nh; g++ {
				combine(piece, at(t.me, inbox(g)))
			}
		}
		if rooted {
			// 3'. The result, into the other leaders' slot for host 0.
			every := func(int) bool { return true }
			if err := t.toOtherLeaders(0, every, inbox(0), mem.Bytes(piece), flag(0), gen); err != nil {
				return err
			}
		}
	} else {
		// 3. The result, from host 0's leader.
		if err := w.waitGE(t.among(), flag(0), gen); err != nil {
			return err
		}
		copy(piece, at(t.me, inbox(0)))
	}
	if n > 0 {
		copy(at(t.me, stage), piece)
	}
	for _, r := range local[1:] {
		if err := t.signal(r, words+hrReadyOff, gen); err != nil {
			return err
		}
	}
	return nil
}

// toOtherLeaders puts b, if any, at off into the leader of every host but
// h that want accepts, from host h+1 round, and, once the data has landed,
// writes gen to the word at word on each (putSignalEach).
func (t *Team) toOtherLeaders(h int, want func(g int) bool, off int, b []byte, word int, gen uint64) error {
	s := t.shape
	nh := len(s.hosts)
	var leaders [hostRedHosts]int
	n := 0
	for i := 1; i < nh; i++ {
		if g := (h + i) % nh; want(g) {
			leaders[n] = s.hosts[g][0]
			n++
		}
	}
	return t.putSignalEach(n, func(i int) int { return leaders[i] }, func(int) []byte { return b }, off, word, core.AtomicWrite, gen)
}
