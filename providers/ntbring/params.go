package ntbring

import (
	"time"

	"github.com/goshmem/goshmem/core"
)

// The provider's parameters, GOSHMEM_NTBRING_<NAME>.
var (
	paramProtocol = core.NewParam(Name, "PROTOCOL", protoRing,
		`ring protocol: "ring" (descriptor rings in the windows, puts landing in the neighbour's heap, doorbells only to wake) `+
			`or "seed" (metadata in scratchpads, one doorbell per worker, relays through bypass windows, as the seed papers)`).
		WithChoices(protoRing, protoSeed)
	paramWorkers = core.NewParam(Name, "WORKERS", "2",
		`worker goroutines per host, 1 to 8: for "seed" each has its own doorbell and data slot on every link (doorbell_dmaputget[n]); `+
			`for "ring" they serve requests and relay`).WithKind(core.KindInt)
	paramBarrier = core.NewParam(Name, "BARRIER", barrierDissemination,
		`the ring protocol's barrier: "dissemination" (log2 n rounds of signals relayed by the rings) or "ring" (the seeds' two rounds of doorbells); "seed" always uses "ring"`).
		WithChoices(barrierDissemination, barrierRing)
	paramSlot = core.NewParam(Name, "SLOT_SIZE", "256K",
		"bytes of one data slot in each memory window; larger transfers travel in pieces of this size, 4K to 16M").WithKind(core.KindSize)
	paramDevice = core.NewParam(Name, "DEVICE", deviceEmu,
		`the NT device: "emu" (the emulated PLX port, hosts as processes or goroutines) or "sim" `+
			`(the simulated fabric of internal/ntb/sim, every host a goroutine of one process; virtual time under testing/synctest)`).
		WithChoices(deviceEmu, deviceSim)
	paramTimeout = core.NewParam(Name, "TIMEOUT", "5s",
		"how long an operation waits for its answer, or for a link slot, before the peer counts as lost").WithKind(core.KindDuration)
)

// protocolsAllowed is what GOSHMEM_NTBRING_PROTOCOL accepts.
var protocolsAllowed = core.ChoicesShown(paramProtocol.Choices)

// settings are the parameters as one Open read them.
type settings struct {
	protocol string
	barrier  string
	workers  int
	slotSize int
	timeout  time.Duration
	cpus     int // the CPUs the job's hosts share, when they share one machine
}

// minTimeout and maxTimeout bound TIMEOUT: below a tenth of a second a
// busy but healthy neighbour counts as lost, and above an hour a lost one
// is waited for as good as forever.
const (
	minTimeout = 100 * time.Millisecond
	maxTimeout = time.Hour
)

const (
	minSlot   = 4 << 10
	maxSlot   = 16 << 20
	slotAlign = 4 << 10
)

// readSettings reads and validates the parameters. Errors are
// *core.EnvError naming the variable and what it accepts.
func readSettings(cfg *core.Config) (settings, error) {
	var s settings
	var err error
	if s.protocol, err = cfg.Choice(paramProtocol); err != nil {
		return s, err
	}
	if s.barrier, err = cfg.Choice(paramBarrier); err != nil {
		return s, err
	}
	if s.workers, err = cfg.Int(paramWorkers, 1, maxSlots); err != nil {
		return s, err
	}
	n, err := paramSlot.Size(cfg.Lookup, minSlot, maxSlot)
	if err != nil {
		return s, err
	}
	if n%slotAlign != 0 {
		return s, &core.EnvError{Var: paramSlot.Env, Value: cfg.Value(paramSlot), Allowed: "a multiple of 4K from 4K to 16M"}
	}
	s.slotSize = int(n)
	if s.timeout, err = cfg.DurationIn(paramTimeout, minTimeout, maxTimeout); err != nil {
		return s, err
	}
	if s.cpus, err = cfg.CPUs(); err != nil {
		return s, err
	}
	return s, nil
}
