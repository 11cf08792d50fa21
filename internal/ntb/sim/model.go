package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/goshmem/goshmem/core"
)

// Model is the device model: what every device action costs, in virtual
// time. Every figure is named; docs/ntb-sim.md, "The device model", gives
// each one's source.
type Model struct {
	// Name is the profile's name ("gen3x8", "gen4x16").
	Name string
	// LinkBytesPerSec is the raw rate of one link direction after line
	// encoding: transfer rate x lanes x 128/130 / 8.
	LinkBytesPerSec float64
	// MaxPayload is the largest payload of one memory-write TLP (the
	// Max_Payload_Size the devices agree on).
	MaxPayload int
	// TLPOverhead is what each TLP costs on the wire beside its payload:
	// framing, a 4-DW header, LCRC, and the share of ACK and flow-control
	// DLLPs that comes with it.
	TLPOverhead int
	// PostedWrite is the flight of a posted write across the bridge, from
	// the sender's port to the peer's memory: a DMA's last byte, a
	// doorbell write.
	PostedWrite time.Duration
	// ReadRoundTrip is a non-posted read across the link (a peer
	// scratchpad read): request out, completion back.
	ReadRoundTrip time.Duration
	// DMASetup is what one DMA descriptor costs its channel before its
	// bytes move: the driver writes it, the engine fetches it.
	DMASetup time.Duration
	// DoorbellIRQ is the delivery of a doorbell after its write lands:
	// the interrupt, its handler, the woken thread.
	DoorbellIRQ time.Duration
	// OpCost is the host CPU time of the protocol per device action that
	// crosses the link (a DMA descriptor, a doorbell): it delays the
	// action's effect, not its caller.
	OpCost time.Duration
	// LocalCopyBytesPerSec paces DMA from an inbound window buffer to
	// local memory, which crosses no link.
	LocalCopyBytesPerSec float64
	// SetupJitter, from 0 to 1, varies each descriptor's set-up by up to
	// that fraction, drawn from the fabric's seed; 0 varies nothing.
	SetupJitter float64
}

// Gen3x8 is a PCIe Gen3 x8 link through a PLX PEX87xx NT port, the
// seeds' hardware.
var Gen3x8 = Model{
	Name:                 "gen3x8",
	LinkBytesPerSec:      8e9 * 8 / 8 * 128 / 130,
	MaxPayload:           256,
	TLPOverhead:          26,
	PostedWrite:          400 * time.Nanosecond,
	ReadRoundTrip:        time.Microsecond,
	DMASetup:             time.Microsecond,
	DoorbellIRQ:          2 * time.Microsecond,
	OpCost:               200 * time.Nanosecond,
	LocalCopyBytesPerSec: 10e9,
}

// Gen4x16 is a PCIe Gen4 x16 link: four times Gen3 x8's rate; the
// latencies are Gen3's, which a switch generation changes little.
var Gen4x16 = Model{
	Name:                 "gen4x16",
	LinkBytesPerSec:      16e9 * 16 / 8 * 128 / 130,
	MaxPayload:           256,
	TLPOverhead:          26,
	PostedWrite:          400 * time.Nanosecond,
	ReadRoundTrip:        time.Microsecond,
	DMASetup:             time.Microsecond,
	DoorbellIRQ:          2 * time.Microsecond,
	OpCost:               200 * time.Nanosecond,
	LocalCopyBytesPerSec: 20e9,
}

// Models are the profiles by name.
var Models = map[string]Model{Gen3x8.Name: Gen3x8, Gen4x16.Name: Gen4x16}

// ModelNames lists the profiles, the default first.
var ModelNames = []string{Gen3x8.Name, Gen4x16.Name}

// ModelByName returns the profile called name.
func ModelByName(name string) (Model, error) {
	m, ok := Models[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Model{}, fmt.Errorf("ntb sim: model %q: allowed %s: %w", name, strings.Join(ModelNames, ", "), core.ErrInvalid)
	}
	return m, nil
}

// PayloadBytesPerSec is the rate of payload a link direction carries in
// full TLPs.
func (m Model) PayloadBytesPerSec() float64 {
	return m.LinkBytesPerSec * float64(m.MaxPayload) / float64(m.MaxPayload+m.TLPOverhead)
}

// WireBytes is what n bytes of payload occupy on the wire: the payload
// and each of its TLPs' overhead.
func (m Model) WireBytes(n int) int64 {
	tlps := (n + m.MaxPayload - 1) / m.MaxPayload
	return int64(n) + int64(tlps)*int64(m.TLPOverhead)
}

// validate checks that m models something.
func (m Model) validate() error {
	switch {
	case m.LinkBytesPerSec <= 0 || m.LocalCopyBytesPerSec <= 0:
		return fmt.Errorf("ntb sim: model %q: rates must be positive: %w", m.Name, core.ErrInvalid)
	case m.MaxPayload < 128 || m.MaxPayload > 4096 || m.TLPOverhead < 0:
		return fmt.Errorf("ntb sim: model %q: TLP payload %d (128 to 4096), overhead %d: %w", m.Name, m.MaxPayload, m.TLPOverhead, core.ErrInvalid)
	case m.PostedWrite < 0 || m.ReadRoundTrip < 0 || m.DMASetup < 0 || m.DoorbellIRQ < 0 || m.OpCost < 0:
		return fmt.Errorf("ntb sim: model %q: negative latency: %w", m.Name, core.ErrInvalid)
	case m.SetupJitter < 0 || m.SetupJitter > 1:
		return fmt.Errorf("ntb sim: model %q: jitter %v (0 to 1): %w", m.Name, m.SetupJitter, core.ErrInvalid)
	}
	return nil
}
