package emu

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The link file, linkFileSize bytes, shared by the two hosts of one link.
// Side A is the Right port of host k, side B the Left port of host k+1
// (mod n), for link k.
//
//	[0, 64)       header, written by the creator before the file gets its
//	              final name, read-only afterwards
//	[128, 140)    link words: forced down (fault injection), down epoch,
//	              forced-down count (read by the other lanes, lanes.go)
//	[256, 768)    side A registers
//	[768, 1280)   side B registers
//
// The registers of one side (offsets within its block of sideSize bytes):
//
//	[0, 4)        attached: the pid of the process holding the port, 0 if none
//	[4, 8)        enabled: LinkEnable (1) or LinkDisable (0)
//	[8, 16)       heartbeat: bumped by the holder while it lives
//	[64, 68)      irq: bumped by every event source; the holder's event
//	              goroutine futex-waits on it
//	[68, 72)      sleeping: 1 while that goroutine is in the kernel
//	[128, 132)    doorbell pending bits
//	[132, 136)    doorbell mask bits
//	[192, 224)    scratchpads, spadCount words
//	[256, 384)    inbound windows, maxWindows slots of {gen u32, 0, size u64}
//	[384, 448)    counters (ntb.Stats), 8 words
//
// Every register is read and written with sync/atomic. Lines written by
// different parties (the holder's heartbeat, the peer's doorbell writes,
// the irq word) lie 64 bytes apart.
const (
	headerSize = 64
	offForced  = 128
	offEpoch   = 132
	offForcedN = 136
	offSides   = 256
	sideSize   = 512

	linkFileSize = 4096

	regAttached  = 0
	regEnabled   = 4
	regHeartbeat = 8
	regIRQ       = 64
	regSleeping  = 68
	regDBPending = 128
	regDBMask    = 132
	regSpads     = 192
	regWindows   = 256
	windowSlot   = 16
	regStats     = 384
	statCount    = 8
)

// Device geometry: the PLX PEX87xx NT port this emulates.
const (
	spadCount   = 8
	dbBits      = 16
	maxWindows  = 8
	dmaChannels = 4
)

// The header. Everything from hdrEnd to headerSize is reserved and zero, so
// a decoded header encodes to the same bytes.
const (
	linkMagic   = "GSHMNTB\x00"
	linkVersion = 1

	hdrMagic    = 0
	hdrVersion  = 8
	hdrLink     = 12
	hdrHosts    = 16
	hdrSpads    = 20
	hdrDBBits   = 24
	hdrWindows  = 28
	hdrMWMax    = 32
	hdrFileSize = 40
	hdrEnd      = 44
)

// header identifies a link file and its geometry. A host checks it before
// it trusts any other word of a file another process created.
type header struct {
	Version  uint32
	Link     uint32 // the link's index k: host k's Right to host k+1's Left
	Hosts    uint32 // hosts in the ring
	Spads    uint32
	DBBits   uint32
	Windows  uint32 // inbound windows per side
	MWMax    uint64 // largest window size in bytes
	FileSize uint32
}

func (h *header) encode(b []byte) {
	b = b[:headerSize]
	clear(b)
	copy(b[hdrMagic:], linkMagic)
	le := binary.LittleEndian
	le.PutUint32(b[hdrVersion:], h.Version)
	le.PutUint32(b[hdrLink:], h.Link)
	le.PutUint32(b[hdrHosts:], h.Hosts)
	le.PutUint32(b[hdrSpads:], h.Spads)
	le.PutUint32(b[hdrDBBits:], h.DBBits)
	le.PutUint32(b[hdrWindows:], h.Windows)
	le.PutUint64(b[hdrMWMax:], h.MWMax)
	le.PutUint32(b[hdrFileSize:], h.FileSize)
}

// HeaderError reports a link file whose header is not one this build
// writes: foreign, truncated, of another layout version or geometry.
type HeaderError struct {
	Field string
	Got   uint64
	Want  string
}

func (e *HeaderError) Error() string {
	return fmt.Sprintf("ntb emu: link file header: %s is %d, want %s", e.Field, e.Got, e.Want)
}

// decodeHeader reads and validates the header of a link file. It accepts
// only what encode writes for a geometry this build supports.
func decodeHeader(b []byte) (header, error) {
	var h header
	if len(b) < headerSize {
		return h, &HeaderError{Field: "length", Got: uint64(len(b)), Want: fmt.Sprintf("at least %d bytes", headerSize)}
	}
	if !bytes.Equal(b[hdrMagic:hdrMagic+8], []byte(linkMagic)) {
		return h, &HeaderError{Field: "magic", Got: binary.LittleEndian.Uint64(b[hdrMagic:]), Want: fmt.Sprintf("%q", linkMagic)}
	}
	le := binary.LittleEndian
	h = header{
		Version:  le.Uint32(b[hdrVersion:]),
		Link:     le.Uint32(b[hdrLink:]),
		Hosts:    le.Uint32(b[hdrHosts:]),
		Spads:    le.Uint32(b[hdrSpads:]),
		DBBits:   le.Uint32(b[hdrDBBits:]),
		Windows:  le.Uint32(b[hdrWindows:]),
		MWMax:    le.Uint64(b[hdrMWMax:]),
		FileSize: le.Uint32(b[hdrFileSize:]),
	}
	checks := []struct {
		field string
		got   uint64
		ok    bool
		want  string
	}{
		{"version", uint64(h.Version), h.Version == linkVersion, fmt.Sprint(linkVersion)},
		{"hosts", uint64(h.Hosts), h.Hosts >= minHosts && h.Hosts <= maxHosts, fmt.Sprintf("%d to %d", minHosts, maxHosts)},
		{"link", uint64(h.Link), h.Link < h.Hosts, "below the host count"},
		{"scratchpads", uint64(h.Spads), h.Spads == spadCount, fmt.Sprint(spadCount)},
		{"doorbell bits", uint64(h.DBBits), h.DBBits == dbBits, fmt.Sprint(dbBits)},
		{"windows", uint64(h.Windows), h.Windows >= minWindows && h.Windows <= maxWindows, fmt.Sprintf("%d to %d", minWindows, maxWindows)},
		{"window size", h.MWMax, h.MWMax >= minMWSize && h.MWMax <= maxMWSize && h.MWMax%mwAlign == 0,
			fmt.Sprintf("a multiple of %d from %d to %d", mwAlign, minMWSize, maxMWSize)},
		{"file size", uint64(h.FileSize), h.FileSize == linkFileSize, fmt.Sprint(linkFileSize)},
	}
	for _, c := range checks {
		if !c.ok {
			return header{}, &HeaderError{Field: c.field, Got: c.got, Want: c.want}
		}
	}
	for i, v := range b[hdrEnd:headerSize] {
		if v != 0 {
			return header{}, &HeaderError{Field: fmt.Sprintf("reserved byte %d", hdrEnd+i), Got: uint64(v), Want: "0"}
		}
	}
	return h, nil
}

// Limits of the ring and of its windows.
const (
	minHosts   = 2
	maxHosts   = 64
	minWindows = 2
	minMWSize  = 4096
	maxMWSize  = 1 << 40
	mwAlign    = 4096
)

// window is the register of one inbound window as the peer reads it: the
// generation of its current translation (0: none) and its size.
type window struct {
	Gen  uint32
	Size uint64
}

// validWindow checks a window register read from the peer's side against
// the link's geometry: a translation the owner could not have set is a
// corrupt register, not something to map.
func validWindow(w window, mwMax uint64) error {
	if w.Gen == 0 {
		if w.Size != 0 {
			return fmt.Errorf("ntb emu: window register: no translation but size %d", w.Size)
		}
		return nil
	}
	if w.Size == 0 || w.Size > mwMax || w.Size%mwAlign != 0 {
		return fmt.Errorf("ntb emu: window register: size %d is not a multiple of %d from %d to %d",
			w.Size, mwAlign, mwAlign, mwMax)
	}
	return nil
}
