// Package ntb is the device contract of a PCIe non-transparent bridge port,
// modelled on Linux include/linux/ntb.h and on PLX PEX87xx NT ports.
//
// A Port is one side of one link. The ring protocol in providers/ntbring
// uses nothing but this interface, so a hardware backend (a UIO or VFIO
// driver for a real NT port) can replace the emulated device without the
// protocol changing.
//
// Semantics every backend must keep, because the protocol relies on them:
//
//   - Writes through an outbound window are posted: they have no
//     completion, and they become visible at the peer in the order they
//     were issued by one goroutine (a release store after the payload is
//     seen after the payload).
//   - Doorbells are bits, not counters: several PeerDBSet calls for the same
//     bit may arrive as one event. An event fires only on a masked-to-pending
//     transition that is unmasked; clearing a mask bit while that bit is
//     pending raises the event.
//   - Scratchpads survive a dead peer; a read across a down link returns
//     all-ones (0xFFFFFFFF) and ErrLinkDown.
//   - After a link down, inbound translations are reset: set them again on
//     link up.
package ntb

import (
	"errors"
	"fmt"
	"time"
)

// Errors a Port returns. Backends wrap them with detail.
var (
	ErrLinkDown = errors.New("ntb: link down")
	ErrClosed   = errors.New("ntb: port closed")
	ErrRange    = errors.New("ntb: index or range out of bounds")
)

// Side names which neighbour a port faces: in a ring, Left or Right; in
// a 2D torus of hosts numbered row by row, Left and Right along the row
// and Up and Down along the column.
type Side int

const (
	Left  Side = iota // towards host id-1 (in a torus, the previous column)
	Right             // towards host id+1 (in a torus, the next column)
	Up                // in a torus: towards the previous row
	Down              // in a torus: towards the next row
)

// Sides is how many sides a host can have.
const Sides = 4

var sideNames = [Sides]string{"left", "right", "up", "down"}

func (s Side) String() string {
	if s >= 0 && s < Sides {
		return sideNames[s]
	}
	return fmt.Sprintf("side(%d)", int(s))
}

// Event is what a port reports to its handler.
type Event struct {
	Kind EventKind
	// DB is the pending, unmasked doorbell bits when Kind is DoorbellEvent.
	// Several peer sets may be merged into one event.
	DB uint64
}

// EventKind is the kind of an Event.
type EventKind int

const (
	LinkEvent     EventKind = iota // link state changed; call LinkIsUp
	DoorbellEvent                  // a doorbell vector fired
)

// Port is one NT port: one side of one PCIe link.
type Port interface {
	// Side says which neighbour the port faces.
	Side() Side

	// LinkIsUp reports whether the link is trained and the peer present.
	LinkIsUp() bool
	// LinkEnable allows traffic across the link; LinkDisable stops it,
	// and after it returns nothing more crosses.
	LinkEnable() error
	LinkDisable() error
	// WaitLink blocks until the link is up or the timeout passes.
	WaitLink(timeout time.Duration) error

	// Events delivers link and doorbell events. There is one channel per
	// port; it is closed when the port closes. A slow reader does not lose
	// doorbells: pending bits stay pending and are merged.
	Events() <-chan Event

	// MWCount is the number of inbound memory windows.
	MWCount() int
	// MWAlign gives the alignment of translated addresses and of sizes,
	// and the largest size, of inbound window i.
	MWAlign(i int) (addrAlign, sizeAlign, maxSize int64, err error)
	// MWSetTrans points inbound window i at a freshly allocated local buffer
	// of size bytes that the peer can write (and DMA into) through its
	// outbound window i, and returns that buffer. This stands for
	// dma_alloc_coherent followed by ntb_mw_set_trans.
	MWSetTrans(i int, size int64) ([]byte, error)
	// MWClearTrans removes the translation of inbound window i.
	MWClearTrans(i int) error

	// PeerMWCount is the number of outbound windows.
	PeerMWCount() int
	// PeerMW maps outbound window i: stores into the returned slice land in
	// the peer's buffer behind its inbound window i. Its length is the size
	// the peer translated; it is ErrLinkDown or ErrRange before the peer has
	// set a translation.
	PeerMW(i int) ([]byte, error)

	// DBValidMask is the set of usable doorbell bits.
	DBValidMask() uint64
	// DBRead returns the pending doorbell bits.
	DBRead() uint64
	// DBClear clears pending bits.
	DBClear(bits uint64) error
	// DBReadMask returns the masked bits.
	DBReadMask() uint64
	// DBSetMask masks bits: they stay pending but raise no event.
	DBSetMask(bits uint64) error
	// DBClearMask unmasks bits; a pending bit that becomes unmasked raises
	// an event.
	DBClearMask(bits uint64) error
	// PeerDBSet rings doorbell bits on the peer.
	PeerDBSet(bits uint64) error

	// SpadCount is the number of scratchpad registers on each side.
	SpadCount() int
	// SpadRead and SpadWrite access this side's scratchpads (local,
	// cheap).
	SpadRead(i int) (uint32, error)
	SpadWrite(i int, v uint32) error
	// PeerSpadRead and PeerSpadWrite access the peer's scratchpads across
	// the link. A peer read is non-posted and costs a round trip.
	PeerSpadRead(i int) (uint32, error)
	PeerSpadWrite(i int, v uint32) error

	// DMAChannels is the number of DMA channels of the port's DMA engine.
	DMAChannels() int
	// DMA returns channel c.
	DMA(c int) (DMAChannel, error)

	// Close releases the port. The peer sees the link go down.
	Close() error
}

// DMAChannel copies from local memory into an outbound window (a put) or
// from an inbound window buffer to local memory, asynchronously.
type DMAChannel interface {
	// Submit queues a copy of src into dst and returns at once. dst or src
	// must be a slice of a window (PeerMW or MWSetTrans buffer) of the
	// same port. done, if not nil, is called once the copy is complete or
	// has failed; it must not block.
	Submit(dst, src []byte, done func(error)) error
	// Wait returns when every copy submitted so far is complete, with the
	// first error among them.
	Wait() error
}

// Stats are counters a port keeps for inspection (ntbtool).
type Stats struct {
	DoorbellsSent, DoorbellEvents uint64
	SpadReads, SpadWrites         uint64
	PeerSpadReads, PeerSpadWrites uint64
	DMADescriptors, DMABytes      uint64
}

// Inspector is implemented by ports that keep Stats, for tools that show
// them. It was added after the first version of this contract, and a Port
// need not implement it: callers type-assert.
type Inspector interface {
	Stats() Stats
}

// MarshalText writes the side's name, so JSON shows "left", "right",
// "up" or "down". It and UnmarshalText were added after the first
// version of this contract.
func (s Side) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "left", "right", "up" or "down".
func (s *Side) UnmarshalText(b []byte) error {
	for i, name := range sideNames {
		if string(b) == name {
			*s = Side(i)
			return nil
		}
	}
	return fmt.Errorf("ntb: side %q: allowed \"left\", \"right\", \"up\" or \"down\"", b)
}

// Memory is host memory that inbound windows can be pointed at: what a
// driver pins and registers so that a peer's DMA lands straight in it
// (a symmetric heap) instead of in a bounce buffer.
type Memory interface {
	// Bytes is the memory, valid until Close.
	Bytes() []byte
	// Close releases the memory. Windows pointed at it must be cleared
	// or their ports closed first.
	Close() error
}

// WindowExporter is implemented by ports whose inbound windows can be
// pointed at Memory the host registered with its device, rather than at
// a fresh buffer: ntb_mw_set_trans with the DMA address of an existing
// buffer. It was added after the first version of this contract; callers
// type-assert and fall back to bounce buffers without it.
type WindowExporter interface {
	// MWSetTransMem points inbound window i at m. The window's size is
	// m's, rounded up to the window's size alignment; it must not exceed
	// the window's largest size.
	MWSetTransMem(i int, m Memory) error
}

// PeerWatcher is a port that can tell a neighbour that died (its host
// crashed, or stopped its heartbeat) from a link that is merely down,
// which traffic may route round. A port without it gives no such word.
type PeerWatcher interface {
	// PeerDead reports whether the neighbour's host died.
	PeerDead() bool
}

// VirtualClock is implemented by simulated ports whose costs are virtual
// time (internal/ntb/sim under testing/synctest): there, time passes only
// while every goroutine waits, so a caller that polls for a while before
// it sleeps must bound its polling by a count, not by the clock, or the
// clock never moves.
type VirtualClock interface {
	// VirtualTime reports whether the port's time is virtual.
	VirtualTime() bool
	// StoreFlight is how long a store through an outbound window takes
	// to land at the peer. The port cannot charge it (a store is a
	// store), so a receiver that polls memory the peer stores into
	// charges it itself when its polling finds something new.
	StoreFlight() time.Duration
}
