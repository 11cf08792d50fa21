package loopback

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
)

// The control file of a PE, ctlSize bytes:
//
//	[0, 64)     header, written once by the owner before the others map it
//	[128, 132)  waiters: how many goroutines of the owner are armed to wait
//	[132, 136)  anyWaiters: how many of them wait for any change (no range,
//	            or no free watch slot)
//	[136, 144)  watchMask: a summary of the watches, a bit per class of
//	            pages (see pageBits), or every bit while anyWaiters is
//	            not 0, so a write far from every watch is told apart with
//	            one load instead of a scan of the slots
//	[256, 260)  seq: bumped by every PE that lands data a waiter watches;
//	            the owner's waiters futex-wait on it
//	[260, 264)  sleepers: how many of the owner's waiters are in the kernel
//	[264, 268)  pollers: how many of the owner's waiters sleep in the
//	            runtime's poller on its wake-up pipe (see wake.go); zero
//	            unless the job sleeps that way
//	[384, 640)  watches: watchSlots slots of {lo, hi uint64}, the watched
//	            range [lo, hi) encoded by watchKey; hi == 0 is a free slot
//	[640, 644)  barCount: in PE 0's file only, how many PEs have arrived at
//	            the domain's barrier (see barrier.go)
//	[768, 772)  barGen: in PE 0's file only, the barrier's generation, which
//	            the last PE to arrive bumps; waiters futex-wait on it
//	[772, 776)  barSleepers: how many PEs sleep in the kernel on barGen
//	[896, 2944) barFlags: barRounds lines of {flag, sleepers uint32}: flag r
//	            holds the last barrier in which the PE 2^r ranks below
//	            signalled this one in round r of the dissemination barrier
//	[2944, 2948) barEpoch: how many dissemination barriers the owner has
//	            passed; written by the owner only
//	[2948, 2952) barMode: which barrier the job uses, the same in every
//	            file: 1 dissemination, 0 counter; written before sharing
//
// waiters lives on a cache line of its own because every remote put and
// atomic loads it: while nobody arms or disarms, that line stays shared in
// every core's cache and the load costs almost nothing. seq and sleepers
// (and pollers) share a line because a waker writes seq and then reads
// sleepers. 128-byte
// spacing keeps the lines out of each other's adjacent-line prefetch. The
// watches are read only while waiters != 0, and written only by the owner.
// The barrier's count and generation have lines of their own: every PE
// adds to the count, every waiter polls the generation. Each dissemination
// flag has a line of its own: one PE writes it, its owner polls it.
// barEpoch and barMode are in the file, not in the domain, so that
// another implementation of the barrier in the owner's process (the C
// library's, see PROTOCOL.md) counts the same barriers.
const (
	hdrSize        = 64
	offWaiters     = 128
	offAnyWaiters  = 132
	offWatchMask   = 136
	offSeq         = 256
	offSleepers    = 260
	offPollers     = 264
	offWatches     = 384
	watchSlots     = 16
	offBarCount    = offWatches + watchSlots*16
	offBarGen      = offBarCount + 128
	offBarSleepers = offBarGen + 4
	offBarFlags    = offBarGen + 128
	barRounds      = 16 // log2 of the most PEs a dissemination barrier serves
	offBarEpoch    = offBarFlags + barRounds*128
	offBarMode     = offBarEpoch + 4
	ctlSize        = offBarEpoch + 128
	watchOffBits   = 48 // region offsets below 256 TiB
	watchRegionMax = 1<<(64-watchOffBits) - 1
)

// watchKey places offset off of region idx on one line, so a watched range
// and a written range compare with two integer comparisons.
func watchKey(idx, off int) uint64 { return uint64(idx)<<watchOffBits | uint64(off) }

// pageShift sizes the pages of the watch summary: 4 KiB.
const pageShift = 12

// summaryPages is the longest range, in pages, whose summary names its
// pages; a longer one sets every bit.
const summaryPages = 8

// pageBits is the summary of the encoded range [lo, hi), hi > lo: one bit
// per page it touches, chosen by Fibonacci hashing so that pages at
// regular strides (a heap's internal words and its user part) rarely
// share one; every bit for a range of more than summaryPages pages. Two
// ranges that share a byte share a bit, so a write whose bits miss the
// summary touches no watched byte. A range within one page, what most
// operations write, takes no call.
func pageBits(lo, hi uint64) uint64 {
	first, last := lo>>pageShift, (hi-1)>>pageShift
	if first == last {
		return pageBit(first)
	}
	return pagesBits(first, last)
}

func pageBit(p uint64) uint64 { return 1 << (p * 0x9e3779b97f4a7c15 >> 58) }

func pagesBits(first, last uint64) uint64 {
	if last-first >= summaryPages {
		return ^uint64(0)
	}
	var m uint64
	for p := first; p <= last; p++ {
		m |= pageBit(p)
	}
	return m
}

// ctlMagic opens every control file; ctlVersion changes with the layout.
const (
	ctlMagic   = "GSHMLOOP"
	ctlVersion = 8
)

// Header field offsets. Everything after offDomain+8 up to hdrSize is
// reserved and must be zero, so a decoded header encodes to the same bytes.
const (
	offMagic   = 0
	offVersion = 8
	offRank    = 12
	offNPEs    = 16
	offCtlSize = 20
	offJobHash = 24
	offDomain  = 32
	offEnd     = 40
)

// ctlHeader identifies a control file: whose it is, for which job and
// domain, and in which layout. Peers check it before they trust any other
// word of the file.
type ctlHeader struct {
	Version uint32
	Rank    uint32
	NPEs    uint32
	CtlSize uint32
	JobHash uint64 // jobHash of the job's id
	Domain  uint64 // the domain's id, shared by its PEs (see Open)
}

// encode writes h into b[:hdrSize]; it writes the version h carries, so
// tests can make headers of other versions.
func (h *ctlHeader) encode(b []byte) {
	b = b[:hdrSize]
	clear(b)
	copy(b[offMagic:], ctlMagic)
	le := binary.LittleEndian
	le.PutUint32(b[offVersion:], h.Version)
	le.PutUint32(b[offRank:], h.Rank)
	le.PutUint32(b[offNPEs:], h.NPEs)
	le.PutUint32(b[offCtlSize:], h.CtlSize)
	le.PutUint64(b[offJobHash:], h.JobHash)
	le.PutUint64(b[offDomain:], h.Domain)
}

// decodeHeader reads a header. The bytes come from a file another process
// wrote, so anything is possible; anything malformed is an error saying
// what, never a panic.
func decodeHeader(b []byte) (ctlHeader, error) {
	if len(b) < hdrSize {
		return ctlHeader{}, fmt.Errorf("control header is %d bytes, want at least %d", len(b), hdrSize)
	}
	if !bytes.Equal(b[offMagic:offMagic+len(ctlMagic)], []byte(ctlMagic)) {
		return ctlHeader{}, fmt.Errorf("control header starts with %q, not %q: not a loopback control file",
			b[offMagic:offMagic+len(ctlMagic)], ctlMagic)
	}
	le := binary.LittleEndian
	h := ctlHeader{
		Version: le.Uint32(b[offVersion:]),
		Rank:    le.Uint32(b[offRank:]),
		NPEs:    le.Uint32(b[offNPEs:]),
		CtlSize: le.Uint32(b[offCtlSize:]),
		JobHash: le.Uint64(b[offJobHash:]),
		Domain:  le.Uint64(b[offDomain:]),
	}
	if h.Version != ctlVersion {
		return ctlHeader{}, fmt.Errorf("control file layout version %d, this build knows %d: do all PEs run the same goshmem?",
			h.Version, ctlVersion)
	}
	if i := bytes.IndexFunc(b[offEnd:hdrSize], func(r rune) bool { return r != 0 }); i >= 0 {
		return ctlHeader{}, fmt.Errorf("control header has non-zero reserved byte at offset %d", offEnd+i)
	}
	return h, nil
}

// check compares a decoded header with what this PE expects of pe's file.
func (h *ctlHeader) check(want ctlHeader) error {
	switch {
	case h.Rank != want.Rank:
		return fmt.Errorf("control file claims rank %d, want %d", h.Rank, want.Rank)
	case h.NPEs != want.NPEs:
		return fmt.Errorf("control file is for a job of %d PEs, this job has %d", h.NPEs, want.NPEs)
	case h.JobHash != want.JobHash:
		return fmt.Errorf("control file belongs to another job (job hash %#x, want %#x)", h.JobHash, want.JobHash)
	case h.Domain != want.Domain:
		return fmt.Errorf("control file belongs to another domain (id %#x, want %#x)", h.Domain, want.Domain)
	case h.CtlSize != want.CtlSize:
		return fmt.Errorf("control file size %d, want %d", h.CtlSize, want.CtlSize)
	}
	return nil
}

// jobHash condenses a job id for the header.
func jobHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
