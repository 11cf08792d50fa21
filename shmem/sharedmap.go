package shmem

import (
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

// TeamWords is where a team's broadcasts and direct gathers count, for a
// second implementation of their protocol on the mapped memory (the C
// library's, which must meet Go's word for word): rank s's word is s
// words after From in this PE's memory, and at the same offset from the
// heap in every member's; this PE's count of it, ever, s words after
// Seen, which only this PE touches. Push says the team's broadcasts of up to
// BroadcastPushMax bytes go by push (docs/collectives.md). The addresses
// are valid while the team lives.
type TeamWords struct {
	From, Seen *uint64
	Push       bool
}

// Words returns the team's TeamWords.
func (t *Team) Words() TeamWords {
	return TeamWords{
		From: t.g.word(gwFrom),
		Seen: &t.seen[gwFrom],
		Push: t.g.pushes(),
	}
}
