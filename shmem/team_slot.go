package shmem

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// A team slot is the part of the internal heap a team's collectives signal
// through. Its layout is the same on every PE:
//
//	wordsOff      the team's group words (coll_group.go), a line each
//	              but for the direct gathers', which are read together
//	releaseOff    the payload the tree sends down
//	upOff         the payloads of the tree's children, one per child
//	heardOff      the blocks heard of in the host-aware data-moving
//	              collectives, ever (see coll_hostdata.go)
//	seenOff       what each of the group words has counted, ever
//	              (Team.seen), then the generation of the gather banks
//	              (Team.gatherGen): this PE's alone, which no other PE
//	              writes; in the slot, so the C library's collectives
//	              on the mapped memory count on the same words as Go's
//	slotBanksOff  two banks, by generation parity, of messages: a
//	              generation word on a line of its own, then a payload;
//	              on a team with a host shape, which sends no
//	              messages, the words and (but on the World's team) the
//	              data of its reductions by host (coll_hostreduce.go)
//
// Every word a PE waits on alone has a cache line to itself, so the
// signal for one round does not disturb a PE polling for another.
// Generations and counts only grow, so words are never reset while a
// team lives and back-to-back collectives need no extra synchronisation.
const (
	wordsOff     = 0
	releaseOff   = wordsOff + groupWordsSize
	upOff        = releaseOff + treeChunk
	heardOff     = upOff + treeArity*treeChunk
	seenOff      = heardOff + cacheLine
	slotBanksOff = seenOff + (int(gwWords+1)*8+cacheLine-1)&^(cacheLine-1)
)

// slotLayout sizes the message banks of a slot for a job of npes PEs: one
// message per round of a recursive-doubling reduction, plus the fold and
// unfold of the PEs past the largest power of two.
type slotLayout struct {
	msgs  int // messages per bank
	chunk int // payload bytes per message, a multiple of the cache line
}

func newSlotLayout(npes int) slotLayout {
	msgs := bits.Len(uint(npes)) + 1
	chunk := ((teamSlotSize-slotBanksOff)/(2*msgs) - cacheLine) &^ (cacheLine - 1)
	return slotLayout{msgs: msgs, chunk: chunk}
}

// base is the heap offset of the team's slot.
func (t *Team) base() int { return teamsOff + t.slot*teamSlotSize }

// msgOff is the heap offset of message k of a bank: its generation word;
// the payload follows one line later.
func (t *Team) msgOff(bank, k int) int {
	l := &t.w.coll.layout
	return t.base() + slotBanksOff + (bank*l.msgs+k)*(cacheLine+l.chunk)
}

// signal writes gen to the word at off on the team's PE rank.
func (t *Team) signal(rank, off int, gen uint64) error {
	return t.w.coll.ep.Atomic(t.members[rank], t.w.heap, off, core.AtomicWrite, core.Uint64, gen)
}

// send puts data as message k of the bank of gen on the team's PE rank,
// then announces it with gen. The payload lands before the generation word
// that announces it.
func (t *Team) send(rank, k int, gen uint64, data []byte) error {
	off := t.msgOff(int(gen&1), k)
	return t.putSignal(rank, off+cacheLine, data, off, core.AtomicWrite, gen)
}

// putSignal puts data, if any, at off in the heap of the team's PE rank,
// then applies op with v to the heap's word at sig there, which announces
// it: in one operation where the endpoint carries both as one
// (core.CapPutSignal).
func (t *Team) putSignal(rank, off int, data []byte, sig int, op core.AtomicOp, v uint64) error {
	return t.putSignalIn(rank, t.w.heap, off, data, sig, op, v)
}

// putSignalEach puts data(i), if any, at off in the heap of the team's PE
// to(i), for each i below n, then applies op with v to the word at sig on
// each: one put-with-signal a PE where the endpoint carries them as one;
// else every put, one fence and every signal, so an endpoint whose fence
// waits for the puts (ntbring's) waits once.
func (t *Team) putSignalEach(n int, to func(i int) int, data func(i int) []byte, off, sig int, op core.AtomicOp, v uint64) error {
	w := t.w
	ep := w.coll.ep
	if w.info.Caps&core.CapPutSignal != 0 {
		for i := range n {
			if err := ep.PutSignal(t.members[to(i)], w.heap, off, data(i), w.heap, sig, op, v); err != nil {
				return err
			}
		}
		return nil
	}
	put := false
	for i := range n {
		if b := data(i); len(b) > 0 {
			if err := ep.Put(t.members[to(i)], w.heap, off, b); err != nil {
				return err
			}
			put = true
		}
	}
	if put {
		if err := ep.Fence(); err != nil {
			return err
		}
	}
	for i := range n {
		if err := ep.Atomic(t.members[to(i)], w.heap, sig, op, core.Uint64, v); err != nil {
			return err
		}
	}
	return nil
}

// putSignalIn is putSignal with the data at off in region dr.
func (t *Team) putSignalIn(rank int, dr core.Region, off int, data []byte, sig int, op core.AtomicOp, v uint64) error {
	w := t.w
	return w.coll.ep.PutSignal(t.members[rank], dr, off, data, w.heap, sig, op, v)
}

// recv waits for message k of generation gen and returns its first n
// payload bytes, as they lie in this PE's heap.
func (t *Team) recv(k int, gen uint64, n int) ([]byte, error) {
	off := t.msgOff(int(gen&1), k)
	if err := t.w.waitGE(t.among(), off, gen); err != nil {
		return nil, err
	}
	return t.w.local[off+cacheLine : off+cacheLine+n], nil
}

// clearSlot zeroes the slot once nobody signals through it any more, so
// the next team to use it starts from generation zero.
func (t *Team) clearSlot() {
	words := mem.Slice[uint64](t.w.local[t.base() : t.base()+teamSlotSize])
	for i := range words {
		atomic.StoreUint64(&words[i], 0)
	}
}

// TeamLimitError reports that a team could not be created because one of
// its members already belongs to as many teams as it can.
type TeamLimitError struct{ Max int }

func (e *TeamLimitError) Error() string {
	return fmt.Sprintf("shmem: team split: a member already belongs to %d teams, the most a PE may; destroy teams no longer used", e.Max)
}

func (e *TeamLimitError) Unwrap() error { return core.ErrNoMemory }
