package shmem

import (
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/mem"
)

// Host-aware reductions larger than the tree carries, on the World's team
// when it has a host shape (coll_hosts.go). Inside a host every PE maps its peers'
// memory, so a PE reads what it needs from them instead of being sent it;
// between hosts only the hosts' leaders talk, and each sends its host's
// partial result once to every other leader. A piece of the data goes:
//
//  1. Every PE copies its piece into its stage and tells its host's PEs.
//  2. Reduce-scatter inside the host: the PE at place q of its host's list
//     combines slice q of the piece (q of as many slices as the host has
//     PEs) out of every host peer's stage, in place order, and writes the
//     host's partial slice back into its own stage.
//  3. The leader gathers its host's partial into its inbox slot for its
//     own host, by copies from its peers' stages, and puts it into the
//     same slot of every other host's leader.
//  4. Once a leader holds every host's partial it tells its peers; each
//     PE combines its slice over the hosts' partials, in host order,
//     reading the others' out of its leader's inbox.
//  5. Allgather inside the host: every PE writes its final slice into its
//     stage and copies the other slices out of its peers' stages.
//
// Every element is combined by one PE of each host from the same operands
// in the same order, so every member gets the same bits, floating-point
// sums included. What crosses between hosts is each host's partial, once
// per other host, in one step; the flat reduce-scatter and allgather take
// two, and send every PE's blocks to every PE of the other hosts.
//
// With hosts of as many PEs, each PE could instead send its partial slice
// to its counterparts on the other hosts, and combine its slice out of its
// own inbox: more, smaller messages between hosts, and no leader to wait
// for. Over tcp on namespaced hosts whose PEs outnumber the CPUs,
// alternating with the leaders in one run (7 rounds, medians of 64 KiB
// sum-reduce), it measured slower at 3 x 2 (1191 µs against 910, slower
// in every round) and the same at 2 x 2 (443 against 433): each message
// wakes a process on another host. The leaders stay.
//
// Each of a PE's words is counted or written by generation, the pieces
// ever moved on the team, and the stage and inbox come in two banks by
// generation parity. A PE writes into bank g%2 for piece g+2 only after
// it finished piece g+1, which took every host peer's final slice of g+1,
// sent once that peer had finished piece g, reading out of this PE's stage
// and its leader's inbox included. A leader's inbox of bank g%2 is written
// for piece g+2 by a leader that finished g+1, which took this host's
// partial of g+1, sent once every PE of this host had begun g+1 and so
// finished reading that inbox for g.
//
// The words are at the start of the World team's slot's message banks and
// the data is the World's bulk banks, neither of which the World's
// reductions use otherwise once it has a host shape (they never take
// recursive doubling or bulkReduce then).
//
// Other teams keep recursive doubling. Their only room is their slot's
// message banks, in which a piece of a 3-host team holds 2 KiB, and over
// tcp on namespaced hosts a piece cost what a whole round of recursive
// doubling does: a team of ranks 0 to 4 of 3 x 2 (5 rounds, medians),
// 2 KiB by host 579 µs against 563 by recursive doubling, 64 KiB 18.6 ms
// against 17.6. On the World, whose bulk area holds 64 KiB in one piece,
// the same measure gave 650 µs against 1834 for bulkReduce at 2 KiB and
// 614 against 1957 at 8 KiB (2 x 2: 261 against 795, 268 against 754).
const (
	hrGenOff     = 0                        // pieces moved, ever; this PE's own count
	hrStagedOff  = hrGenOff + cacheLine     // host peers' stages written
	hrReducedOff = hrStagedOff + cacheLine  // leader: host peers' partial slices written
	hrReadyOff   = hrReducedOff + cacheLine // the last generation whose partials all reached the leader
	hrFinalOff   = hrReadyOff + cacheLine   // host peers' final slices written
	hrFlagsOff   = hrFinalOff + cacheLine   // leader: one line per host, the generation of its partial
	hrWordsEnd   = hrFlagsOff + hostRedHosts*cacheLine

	// hostRedHosts is the most hosts the World may span for its large
	// reductions to go by host: every leader keeps an inbox slot for each
	// host's partial and sends its own to each of the others, (hosts-1)
	// times the data from each host, where bulkReduce sends about twice
	// the data from each PE; measured only up to 3 hosts.
	hostRedHosts = 8
)

func init() {
	if slotBanksOff+hrWordsEnd > teamSlotSize {
		panic("shmem: host-aware reductions overflow a team slot")
	}
}

// hostReduceFits reports whether a reduction too large for the tree goes
// by host on the team.
func (t *Team) hostReduceFits() bool {
	return t == t.w.coll.world && t.shape != nil && len(t.shape.hosts) <= hostRedHosts && t.w.direct != nil
}

// hostReduce all-reduces acc over the World's team with a host shape,
// piece after piece (see above).
func hostReduce[T Elem](t *Team, acc []T, combine func(acc, in []T)) error {
	if len(acc) == 0 {
		return nil
	}
	s := t.shape
	size := mem.SizeOf[T]()
	data, area := bulkBanks, bulkOff+bulkSize-bulkBanks
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
	h := s.hostOf[t.me]
	local := s.hosts[h]
	nl, q := len(local), s.pos[t.me]
	leader := local[0]
	size := mem.SizeOf[T]()
	n := len(piece)
	lo, hi := q*n/nl, (q+1)*n/nl
	// peer returns the piece-sized run of bytes at off in team rank r's
	// memory, which this PE maps.
	peer := func(r, off int) []T {
		b := w.local
		if r != t.me {
			b = w.direct.PeerBytes(t.members[r], w.heap)
		}
		return mem.Slice[T](b[off : off+n*size])
	}
	tell := func(word int) error {
		for i := 1; i < nl; i++ {
			if err := t.add(local[(q+i)%nl], words+word); err != nil {
				return err
			}
		}
		return nil
	}
	counted := uint64(nl-1) * gen

	// 1. Stage.
	copy(mem.Slice[T](w.local[stage:stage+n*size]), piece)
	if err := tell(hrStagedOff); err != nil {
		return err
	}
	if err := w.waitGE(words+hrStagedOff, counted); err != nil {
		return err
	}
	// 2. This PE's slice of the host's partial, in place order.
	mine := peer(t.me, stage)[lo:hi]
	if nl > 1 && hi > lo {
		out := piece[lo:hi]
		copy(out, peer(local[0], stage)[lo:hi])
		for i := 1; i < nl; i++ {
			combine(out, peer(local[i], stage)[lo:hi])
		}
		copy(mine, out)
	}
	if t.me != leader {
		if err := t.add(leader, words+hrReducedOff); err != nil {
			return err
		}
	} else {
		// 3. The host's partial to every other leader.
		if err := w.waitGE(words+hrReducedOff, counted); err != nil {
			return err
		}
		own := mem.Slice[T](w.local[inbox(h) : inbox(h)+n*size])
		for i, r := range local {
			a, b := i*n/nl, (i+1)*n/nl
			copy(own[a:b], peer(r, stage)[a:b])
		}
		ep := w.coll.ep
		for i := 1; i < len(s.hosts); i++ {
			g := (h + i) % len(s.hosts)
			if err := ep.Put(t.members[s.hosts[g][0]], w.heap, inbox(h), mem.Bytes(own)); err != nil {
				return err
			}
		}
		if err := ep.Fence(); err != nil {
			return err
		}
		for i := 1; i < len(s.hosts); i++ {
			g := (h + i) % len(s.hosts)
			if err := t.signal(s.hosts[g][0], words+hrFlagsOff+h*cacheLine, gen); err != nil {
				return err
			}
		}
		for i := 1; i < len(s.hosts); i++ {
			g := (h + i) % len(s.hosts)
			if err := w.waitGE(words+hrFlagsOff+g*cacheLine, gen); err != nil {
				return err
			}
		}
		for i := 1; i < nl; i++ {
			if err := t.signal(local[i], words+hrReadyOff, gen); err != nil {
				return err
			}
		}
	}
	if t.me != leader {
		if err := w.waitGE(words+hrReadyOff, gen); err != nil {
			return err
		}
	}
	// 4. This PE's slice over the hosts' partials, in host order.
	if hi > lo {
		out := piece[lo:hi]
		for g := range s.hosts {
			in := mine
			if g != h {
				in = peer(leader, inbox(g))[lo:hi]
			}
			if g == 0 {
				copy(out, in)
			} else {
				combine(out, in)
			}
		}
		copy(mine, out)
	}
	// 5. Every slice from its PE.
	if err := tell(hrFinalOff); err != nil {
		return err
	}
	if err := w.waitGE(words+hrFinalOff, counted); err != nil {
		return err
	}
	for i := 1; i < nl; i++ {
		r := local[(q+i)%nl]
		p := s.pos[r]
		a, b := p*n/nl, (p+1)*n/nl
		copy(piece[a:b], peer(r, stage)[a:b])
	}
	return nil
}
