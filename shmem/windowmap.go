package shmem

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// WindowMap is what a runtime in this process (goshmem's C library) needs
// to put small data straight into the PEs whose memory this process
// reaches through a link's window, without calling into the World for
// each put: every symmetric segment's window onto every such PE, and the
// words of the link to it, which follow the provider's protocol (named by
// Protocol and Version; for ntbring, providers/ntbring/PROTOCOL.md).
// shmem does not read it: it forwards what the provider offers
// (core.WindowMap).
type WindowMap struct {
	Protocol string
	Version  int
	// Max is the largest put, in bytes, the protocol lets a user do by
	// stores.
	Max int
	// Words[pe] and Acked[pe] are the addresses of the words of the link
	// to pe and of the word in which pe acknowledges notices, 0 where puts
	// to pe cannot go through a window.
	Words, Acked []uintptr
	// Segments: the heap first, then the registered static segments in
	// the order they were registered, as in SharedMap.
	Segments []WindowSegment
}

// WindowSegment is one symmetric region and its windows.
type WindowSegment struct {
	// Base and Size are this PE's part: where the program sees it.
	Base uintptr
	Size int
	// Start and End bound the offsets a program's symmetric address may
	// name, [Start, End).
	Start, End int
	// Peers[pe] is the address, in the window onto pe's part, of the
	// region's first byte; 0 where pe's part has no window here.
	Peers []uintptr
}

// WindowMap returns the windows the provider offers, or nil when it
// offers none (core.WindowMap), or no PE is reached through one, or the
// World is finalized. It reflects the segments registered so far. The
// addresses stay valid until Finalize.
func (w *World) WindowMap() *WindowMap {
	wm, ok := w.dom.(core.WindowMap)
	if !ok || w.Err() != nil {
		return nil
	}
	name, version, max := wm.WindowProtocol()
	m := &WindowMap{Protocol: name, Version: version, Max: max,
		Words: make([]uintptr, w.npes), Acked: make([]uintptr, w.npes)}
	any := false
	for pe := range w.npes {
		words, acked := wm.PeerLink(pe)
		if words == nil || acked == nil {
			continue
		}
		m.Words[pe], m.Acked[pe] = mem.Addr(words), mem.Addr(acked)
		any = true
	}
	if !any {
		return nil
	}
	regions, bounds := w.symmetricRegions()
	for i, r := range regions {
		local := r.Local()
		seg := WindowSegment{Start: bounds[i][0], End: bounds[i][1], Peers: make([]uintptr, w.npes)}
		if len(local) < seg.End {
			return nil
		}
		seg.Base, seg.Size = mem.Addr(local), len(local)
		for pe := range w.npes {
			if m.Words[pe] == 0 {
				continue
			}
			if win := wm.PeerWindow(pe, r); len(win) >= seg.End {
				seg.Peers[pe] = mem.Addr(win)
			}
		}
		m.Segments = append(m.Segments, seg)
	}
	return m
}

// symmetricRegions is the heap and the registered static segments, in
// the order of SharedMap's and WindowMap's segments, with the offsets a
// program's address may name in each.
func (w *World) symmetricRegions() ([]core.Region, [][2]int) {
	regions := []core.Region{w.heap}
	bounds := [][2]int{{internalSize, internalSize + w.heapSize}}
	if segs := w.segs.Load(); segs != nil {
		for _, s := range *segs {
			regions = append(regions, s.region)
			bounds = append(bounds, [2]int{0, s.size})
		}
	}
	return regions, bounds
}

// WindowLanded is the provider's part of a put of n bytes at offset off
// of segment seg (WindowMap's numbering) of pe that the caller stored
// through the window and after which the link's words asked for a
// notice (core.WindowMap). It reports false if the put must be done again
// through the World (the link went down since), and an error if the put
// failed.
func (w *World) WindowLanded(seg, pe, off, n int) (bool, error) {
	wm, ok := w.dom.(core.WindowMap)
	if !ok {
		return false, nil
	}
	if err := w.Err(); err != nil {
		return true, err
	}
	var r core.Region
	switch segs := w.segs.Load(); {
	case seg == 0:
		r = w.heap
	case seg > 0 && segs != nil && seg <= len(*segs):
		r = (*segs)[seg-1].region
	default:
		return false, nil
	}
	return wm.WindowLanded(pe, r, off, n)
}
