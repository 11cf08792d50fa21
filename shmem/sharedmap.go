package shmem

import (
	"fmt"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// SharedMap is what a runtime in this process (goshmem's C library) needs
// to move data to and from the PEs whose memory is mapped here without
// calling into the World for each operation: every symmetric segment as
// every PE's part is mapped here, and every PE's control words, which
// follow the provider's shared-memory protocol (named by Protocol and
// Version; for loopback, providers/loopback/PROTOCOL.md). shmem does not
// read it: it forwards what the provider offers (core.SharedMap).
type SharedMap struct {
	Protocol string
	Version  int
	// WritersFence: a writer issues a full memory barrier between landing
	// data and reading the target's control words.
	WritersFence bool
	// Control[pe] is PE pe's control words.
	Control [][]byte
	// Segments: the heap first (its internal area included, so an offset
	// is the provider's), then the registered static segments in the
	// order they were registered.
	Segments []SharedSegment
}

// SharedSegment is one symmetric region as mapped here.
type SharedSegment struct {
	// Base and Size are this PE's part: where the program sees it.
	Base uintptr
	Size int
	// Start and End bound the offsets a program's symmetric address may
	// name, [Start, End): the heap's internal areas lie outside.
	Start, End int
	// Index is the provider's number for the region in its protocol.
	Index int
	// Peers[pe] is the address of pe's part as mapped here (Base for
	// this PE).
	Peers []uintptr
}

// SharedMap returns the World's memory and control words as the provider
// maps them, or nil when the provider offers no such map (its peers'
// memory is not mapped here, or it has no protocol for others to follow)
// or the World is finalized. It reflects the segments registered so far:
// ask again after RegisterStatic. The addresses stay valid until Finalize.
func (w *World) SharedMap() *SharedMap {
	sm, ok := w.dom.(core.SharedMap)
	if !ok || w.Err() != nil {
		return nil
	}
	name, version := sm.SharedProtocol()
	m := &SharedMap{Protocol: name, Version: version, WritersFence: sm.WritersFence(),
		Control: make([][]byte, w.npes)}
	for pe := range w.npes {
		if m.Control[pe] = sm.ControlWords(pe); m.Control[pe] == nil {
			return nil
		}
	}
	regions, bounds := w.symmetricRegions()
	for i, r := range regions {
		seg := SharedSegment{Start: bounds[i][0], End: bounds[i][1], Index: sm.RegionIndex(r), Peers: make([]uintptr, w.npes)}
		local := r.Local()
		if seg.Index < 0 || len(local) < seg.End {
			return nil
		}
		seg.Base, seg.Size = mem.Addr(local), len(local)
		for pe := range w.npes {
			b := sm.PeerBytes(pe, r)
			if len(b) != seg.Size {
				return nil
			}
			seg.Peers[pe] = mem.Addr(b)
		}
		m.Segments = append(m.Segments, seg)
	}
	return m
}

// TeamWords is where a team's collectives count, for a second
// implementation of their protocols on the mapped memory (the C
// library's, which must meet Go's word for word). Words are in this PE's
// memory, each at the same offset from the heap in every member's; counts
// are this PE's alone. The addresses are valid while the team lives.
//
//   - From: rank s's word of the broadcasts and direct gathers, s words
//     on; Seen, s words on: this PE's count of it, ever. Push says the
//     team's broadcasts of up to BroadcastPushMax bytes go by push.
//   - Stage[p]: the staged gathers' word of parity p (Team.stage), and
//     StageSeen[p] this PE's count of it; Gen, the generation of the
//     World's gather banks, whose bank p is at Bank[p], BankSize bytes.
//     Staged says the team's gathers of parts of up to StagePart bytes
//     that fit a bank in all are staged.
type TeamWords struct {
	From, Seen *uint64
	Push       bool

	Stage, StageSeen [2]*uint64
	Gen              *uint64
	Bank             [2]*byte
	BankSize         int
	StagePart        int
	Staged           bool
}

// Words returns the team's TeamWords.
func (t *Team) Words() TeamWords {
	w := TeamWords{
		From:      t.g.word(gwFrom),
		Seen:      &t.seen[gwFrom],
		Push:      t.g.pushes(),
		Stage:     [2]*uint64{t.g.word(gwStage), t.g.word(gwStage + 1)},
		StageSeen: [2]*uint64{&t.seen[gwStage], &t.seen[gwStage+1]},
		Gen:       t.gatherGen,
		Staged:    t.stageFits(1),
	}
	if w.Staged {
		w.Bank = [2]*byte{&t.w.local[gatherOff], &t.w.local[gatherOff+gatherBank]}
		w.BankSize, w.StagePart = gatherBank, stagePart
	}
	return w
}

// WaitCount waits, as the team's collectives wait, until the word at p,
// one of its TeamWords, reaches want: for a second implementation whose
// own polls ran out. op names the routine in the wait report and errors.
func (t *Team) WaitCount(op string, p *uint64, want uint64) error {
	if err := t.check(op); err != nil {
		return err
	}
	off := int(mem.PtrAddr(p) - mem.Addr(t.w.local))
	if off < 0 || off+8 > len(t.w.local) {
		return fmt.Errorf("shmem: %s: the word waited for is not one of the team's: %w", op, core.ErrInvalid)
	}
	err := t.w.waitIn(t.among(), t.w.heap, off, 8, func() bool { return atomic.LoadUint64(p) >= want })
	return t.collErr(op, err)
}
