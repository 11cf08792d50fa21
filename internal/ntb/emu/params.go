package emu

import (
	"fmt"
	"strings"
	"time"

	"github.com/goshmem/goshmem/core"
)

// Model is the timing model of the emulated link. The zero Model is the
// fast model: nothing is paced, every operation costs what the host's
// memory system makes it cost.
type Model struct {
	// DMABytesPerSec paces DMA copies: a port's channels share this
	// bandwidth in the port's outbound direction. 0 means unpaced.
	DMABytesPerSec float64
	// DMASetup is the cost of one descriptor, paid before its copy.
	DMASetup time.Duration
	// SpadReadLatency is the round trip of a non-posted read of a peer
	// scratchpad. Peer scratchpad writes and doorbells are posted and free.
	SpadReadLatency time.Duration
}

// Gen3x8 is a PCIe Gen3 x8 link through a PLX NT port: about 6.5 GB/s of
// DMA per direction, a microsecond to set a descriptor up, a microsecond
// per read across the link.
var Gen3x8 = Model{DMABytesPerSec: 6.5e9, DMASetup: time.Microsecond, SpadReadLatency: time.Microsecond}

// Off reports whether the model paces nothing.
func (m Model) Off() bool { return m == Model{} }

// Options configure a ring. The zero value is not valid; start from
// DefaultOptions or OptionsFromEnv.
type Options struct {
	// Model is the timing model.
	Model Model
	// Windows is the number of inbound (and outbound) memory windows per
	// port, from 2 to 8.
	Windows int
	// MWMax is the largest size of a window translation, a multiple of
	// 4096.
	MWMax int64
	// DeadAfter is how long a peer's heartbeat may stand still before the
	// peer counts as dead. A peer whose process is gone counts as dead
	// within Poll.
	DeadAfter time.Duration
	// Poll is how often a port's event goroutine wakes up on its own to
	// beat its heartbeat and look at its peer.
	Poll time.Duration
	// AttachTimeout bounds how long Open waits for the neighbour's link
	// file to appear.
	AttachTimeout time.Duration
	// Faults are injected by the hosts they concern (see Fault).
	Faults []Fault
	// Tag tells apart rings sharing one directory; it is part of every
	// file name and may hold letters, digits, '-' and '_'.
	Tag string
	// Lanes partitions every host's device into this many lanes, one
	// per PE of the host (0 or 1: one PE per host, no partition), and
	// Lane is the lane this process holds. The lanes of one link share
	// its state: a link forced down is down for every lane. See lanes.go.
	Lane, Lanes int
}

// DefaultOptions are the options of an unset environment.
func DefaultOptions() Options {
	return Options{
		Model:         Gen3x8,
		Windows:       2,
		MWMax:         1 << 30,
		DeadAfter:     5 * time.Second,
		Poll:          20 * time.Millisecond,
		AttachTimeout: time.Minute,
	}
}

// validate checks o for a ring of n hosts.
func (o *Options) validate(n int) error {
	bad := func(what, allowed string) error {
		return fmt.Errorf("ntb emu: %s: allowed %s: %w", what, allowed, core.ErrInvalid)
	}
	switch {
	case n < minHosts || n > maxHosts:
		return bad(fmt.Sprintf("ring of %d hosts", n), fmt.Sprintf("%d to %d hosts", minHosts, maxHosts))
	case o.Windows < minWindows || o.Windows > maxWindows:
		return bad(fmt.Sprintf("%d windows", o.Windows), fmt.Sprintf("%d to %d", minWindows, maxWindows))
	case o.MWMax < minMWSize || o.MWMax > maxMWSize || o.MWMax%mwAlign != 0:
		return bad(fmt.Sprintf("window size %d", o.MWMax),
			fmt.Sprintf("a multiple of %d from %s to %s", mwAlign, core.FormatSize(minMWSize), core.FormatSize(maxMWSize)))
	case o.DeadAfter <= 0 || o.Poll <= 0 || o.AttachTimeout <= 0:
		return bad("timeouts", "positive durations")
	case o.Model.DMABytesPerSec < 0 || o.Model.DMASetup < 0 || o.Model.SpadReadLatency < 0:
		return bad("timing model", "no negative figure")
	case strings.IndexFunc(o.Tag, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0:
		return bad(fmt.Sprintf("tag %q", o.Tag), "letters, digits, '-' and '_'")
	case o.Lanes < 0 || o.Lanes > MaxLanes:
		return bad(fmt.Sprintf("%d lanes per device", o.Lanes), fmt.Sprintf("0 to %d (0 and 1: one PE per host)", MaxLanes))
	case o.Lane < 0 || o.Lane >= max(o.Lanes, 1):
		return bad(fmt.Sprintf("lane %d of %d", o.Lane, max(o.Lanes, 1)), fmt.Sprintf("0 to %d", max(o.Lanes, 1)-1))
	}
	for _, f := range o.Faults {
		if err := f.check(n); err != nil {
			return err
		}
	}
	return nil
}

// The parameters, GOSHMEM_NTB_<NAME>.
var (
	paramModel = core.NewParam("ntb", "MODEL", modelGen3x8,
		`timing model of the emulated link: "gen3x8" (PCIe Gen3 x8) or "off" (no pacing, for tests)`).WithChoices(modelGen3x8, modelOff)
	paramDMABW = core.NewParam("ntb", "DMA_MBPS", "6500",
		"DMA bandwidth per port and direction in MB/s (10^6 bytes) under the gen3x8 model").WithKind(core.KindInt)
	paramDMASetup = core.NewParam("ntb", "DMA_SETUP", "1us",
		"cost of one DMA descriptor under the gen3x8 model").WithKind(core.KindDuration)
	paramSpadRead = core.NewParam("ntb", "SPAD_READ", "1us",
		"round trip of a peer scratchpad read (non-posted) under the gen3x8 model").WithKind(core.KindDuration)
	paramWindows = core.NewParam("ntb", "WINDOWS", "2", "memory windows per port, 2 to 8").WithKind(core.KindInt)
	paramMWMax   = core.NewParam("ntb", "MW_SIZE", "1G", "largest memory window, a multiple of 4K").WithKind(core.KindSize)
	paramDead    = core.NewParam("ntb", "DEAD_AFTER", "5s",
		"how long a live-looking peer may miss heartbeats before its link goes down (a vanished process: at once)").WithKind(core.KindDuration)
	paramFault = core.NewParam("ntb", "FAULT", "",
		`faults to inject, e.g. "link=2:down@100ms;link=2:up@300ms;host=1:kill@2s" (see docs/ntb-device.md)`)
)

// The values of GOSHMEM_NTB_MODEL.
const (
	modelGen3x8 = "gen3x8"
	modelOff    = "off"
)

// Bounds of the duration parameters. A peer's heartbeat is looked at
// every Poll (20ms), so DEAD_AFTER below five of them declares live peers
// dead; above an hour a dead one is waited for as good as forever. A
// modelled delay above a second is a stall, not a model of PCIe.
const (
	minDeadAfter  = 100 * time.Millisecond
	maxDeadAfter  = time.Hour
	maxModelDelay = time.Second
)

// Params lists the emulator's parameters, for a provider's Info.Params.
func Params() []core.Param {
	return []core.Param{paramModel, paramDMABW, paramDMASetup, paramSpadRead, paramWindows, paramMWMax, paramDead, paramFault}
}

// OptionsFromEnv reads the GOSHMEM_NTB_* variables through lookup (nil:
// the process environment) for a ring of n hosts. Errors are
// *core.EnvError naming the variable and what it accepts.
func OptionsFromEnv(lookup func(string) (string, bool), n int) (Options, error) {
	cfg := core.Config{Env: lookup}
	o := DefaultOptions()
	model, err := cfg.Choice(paramModel)
	if err != nil {
		return o, err
	}
	switch model {
	case modelGen3x8:
		mbps, err := cfg.Int(paramDMABW, 1, 1_000_000)
		if err != nil {
			return o, err
		}
		setup, err := cfg.DurationIn(paramDMASetup, 0, maxModelDelay)
		if err != nil {
			return o, err
		}
		spad, err := cfg.DurationIn(paramSpadRead, 0, maxModelDelay)
		if err != nil {
			return o, err
		}
		o.Model = Model{DMABytesPerSec: float64(mbps) * 1e6, DMASetup: setup, SpadReadLatency: spad}
	case modelOff:
		o.Model = Model{}
	}
	if o.Windows, err = cfg.Int(paramWindows, minWindows, maxWindows); err != nil {
		return o, err
	}
	if o.MWMax, err = paramMWMax.Size(cfg.Lookup, minMWSize, maxMWSize); err != nil {
		return o, err
	}
	if o.MWMax%mwAlign != 0 {
		return o, &core.EnvError{Var: paramMWMax.Env, Value: cfg.Value(paramMWMax), Allowed: "a multiple of 4K"}
	}
	if o.DeadAfter, err = cfg.DurationIn(paramDead, minDeadAfter, maxDeadAfter); err != nil {
		return o, err
	}
	if o.Faults, err = ParseFaults(cfg.Value(paramFault), n); err != nil {
		return o, fmt.Errorf("%s: %w", paramFault.Env, err)
	}
	return o, o.validate(n)
}

// EnvWindows is the variable that sets the windows per port.
var EnvWindows = paramWindows.Env
