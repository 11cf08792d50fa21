package emu

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/proc"
	"github.com/goshmem/goshmem/internal/sys"
)

// SideState is what one side of a link holds in its registers.
type SideState struct {
	PID       uint32 // the holder's process, 0 if none; Killed says a ring's goroutine host was killed
	Killed    bool
	Alive     bool // the holder's process exists
	Enabled   bool
	Heartbeat uint64
	Spads     [spadCount]uint32
	DBPending uint16
	DBMask    uint16
	Windows   []WindowState
	Stats     ntb.Stats
}

// WindowState is an inbound window's translation: generation 0 is none.
type WindowState struct {
	Gen  uint32
	Size uint64
}

// Snapshot is a port of a running ring as its link file shows it.
type Snapshot struct {
	Host, Hosts, Link int
	Side              ntb.Side
	// Up is the link state as the port would compute it, but for the
	// heartbeat timeout, which needs watching over time.
	Up         bool
	ForcedDown bool
	Downs      uint32 // link downs so far (the epoch)
	Own, Peer  SideState
}

// Inspect reads the registers of host's port facing side, in a ring whose
// files live in dir under tag, without attaching to it.
func Inspect(dir, tag string, host int, side ntb.Side) (Snapshot, error) {
	rb, rh, err := mapHeader(LinkPath(dir, tag, host))
	if err != nil {
		return Snapshot{}, err
	}
	n := int(rh.Hosts)
	if host < 0 || host >= n || int(rh.Link) != host {
		return Snapshot{}, errors.Join(fmt.Errorf("ntb emu: inspect: link file %d says it is link %d of %d hosts", host, rh.Link, n), sys.Unmap(rb))
	}
	b, h := rb, rh
	if side == ntb.Left {
		if err := sys.Unmap(rb); err != nil {
			return Snapshot{}, err
		}
		if b, h, err = mapHeader(LinkPath(dir, tag, (host+n-1)%n)); err != nil {
			return Snapshot{}, err
		}
	}
	defer func() { _ = sys.Unmap(b) }() // read-only use: nothing to lose
	return snapshot(b, h, host, side), nil
}

// mapHeader maps a link file and validates its header.
func mapHeader(path string) ([]byte, header, error) {
	b, err := sys.OpenShared(path, linkFileSize)
	if err != nil {
		return nil, header{}, fmt.Errorf("ntb emu: inspect: %w", err)
	}
	h, err := decodeHeader(b)
	if err != nil {
		return nil, h, errors.Join(fmt.Errorf("ntb emu: inspect %s: %w", path, err), sys.Unmap(b))
	}
	return b, h, nil
}

func snapshot(b []byte, h header, host int, side ntb.Side) Snapshot {
	ownOff, peerOff := offSides, offSides+sideSize
	if side == ntb.Left {
		ownOff, peerOff = peerOff, ownOff
	}
	file := regs{b}
	s := Snapshot{
		Host: host, Hosts: int(h.Hosts), Link: int(h.Link), Side: side,
		ForcedDown: atomic.LoadUint32(file.u32(offForced)) != 0,
		Downs:      atomic.LoadUint32(file.u32(offEpoch)),
		Own:        sideState(regs{b[ownOff : ownOff+sideSize]}, int(h.Windows)),
		Peer:       sideState(regs{b[peerOff : peerOff+sideSize]}, int(h.Windows)),
	}
	s.Up = !s.ForcedDown && s.Own.Alive && s.Own.Enabled && s.Peer.Alive && s.Peer.Enabled
	return s
}

func sideState(r regs, windows int) SideState {
	pid := atomic.LoadUint32(r.attached())
	s := SideState{
		PID:       pid,
		Killed:    pid == attachedKilled,
		Enabled:   atomic.LoadUint32(r.enabled()) != 0,
		Heartbeat: atomic.LoadUint64(r.heartbeat()),
		DBPending: uint16(atomic.LoadUint32(r.pending())),
		DBMask:    uint16(atomic.LoadUint32(r.mask())),
		Stats:     r.stats(),
	}
	if s.Killed {
		s.PID = 0
	}
	s.Alive = s.PID != 0 && proc.Alive(int(s.PID))
	for i := range s.Spads {
		s.Spads[i] = atomic.LoadUint32(r.spad(i))
	}
	for i := range windows {
		w := r.window(i)
		s.Windows = append(s.Windows, WindowState(w))
	}
	return s
}

// Tags lists the tags of the rings whose link files are in dir, sorted;
// the untagged ring's tag is "".
func Tags(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ntb emu: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), "ntb-")
		if !ok {
			continue
		}
		i := strings.LastIndex(name, "link")
		if i < 0 || !allDigits(name[i+len("link"):]) {
			continue
		}
		switch tag := name[:i]; {
		case tag == "":
			seen[""] = true
		case strings.HasSuffix(tag, "-"):
			seen[strings.TrimSuffix(tag, "-")] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

func allDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}
