package shmem

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The World team's gathered and bulk reductions use the bulk area of the
// internal heap:
//
//	bulkScatterCount  blocks heard of in reduce-scatters, ever
//	bulkGatherCount   blocks heard of in allgathers, ever
//	gatherOff         two banks, by generation parity, of gatherBank
//	                  bytes: every PE's contribution to a small reduction
//	                  (see gatherReduce), or its part of a staged gather
//	                  (see Team.stage)
//	bulkBanks         two banks, by piece parity, each of npes scatter
//	                  slots (the block a member sends this PE, by the
//	                  sender's rank) and npes gather slots (a member's
//	                  reduced block, by its rank); on a World with a host
//	                  shape, the stages and inboxes of the reductions by
//	                  host instead (coll_hostreduce.go)
//
// A piece of the data is cut into npes blocks, block r of which member r
// reduces: every member puts block r of its piece into r's scatter slot,
// r combines the npes contributions in rank order and puts the result into
// every member's gather slot r. Each member sends and receives about twice
// the piece and combines one block of it, where recursive doubling sends
// and combines the whole piece log2 n times; and every member gets the
// same bits, since one member computed each block.
const (
	bulkScatterCount = bulkOff
	bulkGatherCount  = bulkOff + cacheLine
	gatherOff        = bulkOff + 2*cacheLine
	gatherBank       = 64 << 10
	gatherReduceMax  = 1024 // the most bytes of every member's a gatherReduce combines
	bulkBanks        = gatherOff + 2*gatherBank
	bulkBank         = (bulkSize - (bulkBanks - bulkOff)) / 2
)

// bulkSlot is the size of a slot of the bulk area on n PEs, a multiple of
// the cache line; 0 when n is too large for the area to hold a line per
// slot, and the World's large reductions take recursive doubling.
func bulkSlot(n int) int { return bulkBank / (2 * n) &^ (cacheLine - 1) }

// bulkReduce all-reduces acc over the World's team, piece after piece.
//
// A member puts piece g+2 into the bank of piece g only after it has
// finished piece g+1, which needed every member's reduced block of g+1,
// which each member sent after it had read everything of piece g out of
// its own bank: so the two banks need no other synchronisation, within a
// call or between calls.
func bulkReduce[T Elem](t *Team, acc []T, combine func(acc, in []T)) error {
	n := len(t.members)
	if n == 1 || len(acc) == 0 {
		return nil
	}
	size := mem.SizeOf[T]()
	slot := bulkSlot(n)
	per := slot / size * n
	for lo := 0; lo < len(acc); lo += per {
		if err := bulkPiece(t, acc[lo:min(lo+per, len(acc))], combine, slot); err != nil {
			return err
		}
	}
	return nil
}

// bulkPiece reduces one piece: a reduce-scatter, then an allgather.
func bulkPiece[T Elem](t *Team, piece []T, combine func(acc, in []T), slot int) error {
	n, me := len(t.members), t.me
	c := &t.w.coll
	c.bulkGen++
	gen := c.bulkGen
	bank := bulkBanks + int(gen&1)*bulkBank
	scatter, gather := bank, bank+n*slot
	block := func(r int) []T { return piece[r*len(piece)/n : (r+1)*len(piece)/n] }

	// Scatter: block r of this PE's piece to member r's scatter slot me.
	if err := t.bulkSend(scatter+me*slot, bulkScatterCount, func(r int) []byte { return mem.Bytes(block(r)) }); err != nil {
		return err
	}
	if err := t.w.waitGE(t.among(), bulkScatterCount, gen*uint64(n-1)); err != nil {
		return err
	}
	// Combine in rank order, into this PE's block if it is rank 0's, else
	// into rank 0's slot, whose result then goes into this PE's block.
	mine := block(me)
	in := func(r int) []T {
		if r == me {
			return mine
		}
		return mem.Slice[T](t.w.local[scatter+r*slot : scatter+r*slot+len(mine)*mem.SizeOf[T]()])
	}
	sum := in(0)
	for r := 1; r < n; r++ {
		combine(sum, in(r))
	}
	copy(mine, sum)

	// Gather: this PE's reduced block to every member's gather slot me.
	if err := t.bulkSend(gather+me*slot, bulkGatherCount, func(int) []byte { return mem.Bytes(mine) }); err != nil {
		return err
	}
	if err := t.w.waitGE(t.among(), bulkGatherCount, gen*uint64(n-1)); err != nil {
		return err
	}
	for r := range n {
		if r != me {
			b := mem.Bytes(block(r))
			copy(b, t.w.local[gather+r*slot:gather+r*slot+len(b)])
		}
	}
	return nil
}

// bulkSend puts data(r) at off on every other member r and, once it has
// landed, adds one to the count at count there (putSignalEach).
func (t *Team) bulkSend(off, count int, data func(r int) []byte) error {
	n := len(t.members)
	to := func(i int) int { return (t.me + 1 + i) % n }
	return t.putSignalEach(n-1, to, func(i int) []byte { return data(to(i)) }, off, count, core.AtomicAdd, 1)
}
