package shmem

import (
	"math/bits"

	"github.com/goshmem/goshmem/internal/mem"
)

// SumInscan sets dest[i], on every member of t, to the sum of source[i]
// over the members whose rank in t is at most its own: an inclusive scan
// (shmem_sum_inscan, OpenSHMEM 1.6). It scans len(source) elements; dest
// must hold as many and may be source itself. Every member passes the
// same length.
func SumInscan[T ArithElem](t *Team, dest, source []T) error {
	return scan(t, "sum_inscan", dest, source, false, sumOf[T])
}

// SumExscan is SumInscan over the members of lower rank only: an
// exclusive scan (shmem_sum_exscan). The member of rank 0, below which no
// member is, gets zeros.
func SumExscan[T ArithElem](t *Team, dest, source []T) error {
	return scan(t, "sum_exscan", dest, source, true, sumOf[T])
}

// ScanWith is the team scan that combine performs, inclusive or
// exclusive, for types the typed forms do not name (C's long double,
// carried as 16-byte elements). op names the routine in errors.
func ScanWith[T Elem](t *Team, op string, dest, source []T, exclusive bool, combine func(acc, in []T)) error {
	return scan(t, op, dest, source, exclusive, combine)
}

// scanRounds runs the rounds of the dissemination scan of Hillis and
// Steele for rank me of n: in round k, send(me+2^k, k) passes the running
// result up, where that rank exists, then recv(k) takes in the running
// result of rank me-2^k, where that rank exists. After the rounds a rank
// has combined exactly the ranks below it into its own. The scan of
// counts (prefixSum) and the scans of data (scan) both run it.
func scanRounds(n, me int, send func(to, k int) error, recv func(k int) error) error {
	for k := 0; 1<<k < n; k++ {
		if to := me + 1<<k; to < n {
			if err := send(to, k); err != nil {
				return err
			}
		}
		if me >= 1<<k {
			if err := recv(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanArea is where a team's scans land their rounds: the combining
// tree's payload areas of the team slot, which a collective uses only
// while it runs (a scan runs between two barriers, so no other collective
// writes there meanwhile) and which teams of every shape have.
const (
	scanAreaOff  = releaseOff
	scanAreaSize = (1 + treeArity) * treeChunk
)

// scan copies source into dest and scans dest over the team: the
// dissemination rounds (scanRounds), each rank putting its running result
// into the next one's landing place for the round and announcing it on
// the round's group word; for an exclusive scan, one more step passes
// each rank's inclusive result to the rank above, which takes it as its
// own, so every member's result has the bits of the one below it. Data
// larger than a round's landing place goes in pieces. Each piece starts
// with a barrier, so nobody lands data where a member still reads the
// last piece, and the scan ends with one, so the next collective does not
// land data in the tree's areas while a member still reads a round.
func scan[T Elem](t *Team, op string, dest, source []T, exclusive bool, combine func(acc, in []T)) error {
	if err := t.check(op); err != nil {
		return err
	}
	if err := checkReduce(op, dest, source); err != nil {
		return err
	}
	acc := dest[:len(source)]
	copy(acc, source)
	g := &t.g
	n, me := g.n, g.me
	if n == 1 {
		if exclusive {
			clear(acc)
		}
		return nil
	}
	rounds := bits.Len(uint(n - 1))
	steps := rounds
	if exclusive {
		steps++
	}
	place := scanAreaSize / steps &^ (cacheLine - 1)
	per := max(place/mem.SizeOf[T](), 1)
	base := t.base() + scanAreaOff
	for lo := 0; lo == 0 || lo < len(acc); lo += per {
		part := acc[lo:min(lo+per, len(acc))]
		b := mem.Bytes(part)
		if err := t.barrier(); err != nil {
			return t.collErr(op, err)
		}
		send := func(to, k int) error {
			return g.putSignal(to, t.w.heap, base+k*place, b, gwScan+gword(k), 1)
		}
		recv := func(k int) error {
			if err := g.await(gwScan+gword(k), 1); err != nil {
				return err
			}
			combine(part, mem.Slice[T](t.w.local[base+k*place:base+k*place+len(b)]))
			return nil
		}
		if err := scanRounds(n, me, send, recv); err != nil {
			return t.collErr(op, err)
		}
		if exclusive {
			if me+1 < n {
				if err := send(me+1, rounds); err != nil {
					return t.collErr(op, err)
				}
			}
			if me == 0 {
				clear(part)
			} else {
				if err := g.await(gwScan+gword(rounds), 1); err != nil {
					return t.collErr(op, err)
				}
				copy(b, t.w.local[base+rounds*place:base+rounds*place+len(b)])
			}
		}
	}
	return t.collErr(op, t.barrier())
}
