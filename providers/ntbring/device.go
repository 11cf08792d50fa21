package ntbring

import (
	"errors"
	"fmt"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
	"github.com/goshmem/goshmem/internal/ntb/emu"
	"github.com/goshmem/goshmem/internal/ntb/sim"
)

// ringPorts are this host's NT ports, two on a ring and four on a torus,
// how to register memory their windows can be pointed at (nil if the
// device cannot), and how to let go of them.
type ringPorts struct {
	ports     [ntb.Sides]ntb.Port // by side; the topology's sides are set
	newMemory func(size int) (ntb.Memory, error)
	// adoptMemory and joinMemory register memory of the host's PEs with
	// the device, with several PEs per host (emu.Host's AdoptMemory and
	// JoinMemory); nil where the device cannot.
	adoptMemory func(lane, region int, b []byte) (ntb.Memory, error)
	joinMemory  func(lane, region int, b []byte) (ntb.Memory, error)
	close       func() error
	// topo is how the hosts' ports are cabled, as the device describes
	// it; host is this host's id.
	topo topology
	host int
}

// port is the port facing side s.
func (r *ringPorts) port(s ntb.Side) ntb.Port { return r.ports[s] }

// enableLinks enables every link, then waits for all: each comes up only
// once the neighbour has enabled its side.
func enableLinks(r *ringPorts, timeout time.Duration) error {
	for _, s := range r.topo.sides() {
		if err := r.port(s).LinkEnable(); err != nil {
			return portError(s, r.topo.neighbour(r.host, s), "enable the link", err)
		}
	}
	for _, s := range r.topo.sides() {
		if err := r.port(s).WaitLink(max(timeout, linkUpTimeout)); err != nil {
			return portError(s, r.topo.neighbour(r.host, s), "bring the link up", err)
		}
	}
	return nil
}

// alarm rings the broken-ring alarm, naming host lost, on every port
// (alarm.go). A port whose link is down cannot ring, and needs not: its
// neighbour saw the link go down.
func (r *ringPorts) alarm(lost int) {
	for _, s := range r.topo.sides() {
		_ = r.port(s).PeerDBSet(alarmBits(r.topo, r.host, s, lost))
	}
}

// openRing attaches this host to the ring's device: the emulated PLX NT
// ports, with their files in the job's directory and the emulator's
// GOSHMEM_NTB_* settings. tag keeps the files of two domains of one job
// apart. A hardware backend would be chosen here.
// With several PEs per host, this PE holds lane lane of lanes of its
// host's device.
func openRing(cfg *core.Config, host, n, lane, lanes int, tag string) (*ringPorts, error) {
	device, err := cfg.Choice(paramDevice)
	if err != nil {
		return nil, err
	}
	if device == deviceSim {
		return openSim(cfg, host, n, lanes, tag)
	}
	opts, err := emu.OptionsFromEnv(cfg.Lookup, n)
	if err != nil {
		return nil, err
	}
	opts.Tag = tag
	opts.Lane, opts.Lanes = lane, lanes
	if _, set := cfg.Lookup(emu.EnvWindows); !set && lanes > 1 {
		// A lane's partition: the ring window, and a window onto each
		// PE of the host's first region (the heap), as many as fit.
		opts.Windows = max(opts.Windows, min(maxLaneWindows, 1+lanes))
	}
	h, err := emu.Open(cfg.JobDir(), host, n, opts)
	if err != nil {
		return nil, err
	}
	// emu.Host.Close is idempotent: a second close is a no-op.
	return &ringPorts{ports: [ntb.Sides]ntb.Port{ntb.Left: h.Left, ntb.Right: h.Right}, newMemory: h.NewMemory,
		adoptMemory: h.AdoptMemory, joinMemory: h.JoinMemory, close: h.Close, topo: ringOf(n), host: host}, nil
}

// The devices GOSHMEM_NTBRING_DEVICE names.
const (
	deviceEmu = "emu"
	deviceSim = "sim"
)

// openSim attaches this host to the simulated fabric of its job, made by
// the first host to come with the GOSHMEM_NTB_SIM_* settings (or what
// sim.Prepare gave for the job): a ring, or a torus, which the fabric
// describes (GOSHMEM_NTB_SIM_TOPOLOGY). Every host of the job must be a
// goroutine of this process, and its time is virtual only inside a
// testing/synctest bubble.
func openSim(cfg *core.Config, host, n, lanes int, tag string) (*ringPorts, error) {
	if lanes > 1 {
		return nil, fmt.Errorf("several PEs per host on the simulated device: %w", core.ErrNotSupported)
	}
	c, err := sim.ConfigFromEnv(cfg.Lookup, n)
	if err != nil {
		return nil, err
	}
	h, release, err := sim.Attach(cfg.JobID, tag, host, c)
	if err != nil {
		return nil, err
	}
	r := &ringPorts{newMemory: h.NewMemory, close: release, topo: ringOf(n), host: host}
	if w := h.Fabric().Width(); w != 0 {
		r.topo = torusOf(n, w)
	}
	for _, p := range h.Ports() {
		r.ports[p.Side()] = p
	}
	return r, nil
}

// maxLaneWindows is the most windows of a lane's partition ntbring asks
// the emulated device for unless GOSHMEM_NTB_WINDOWS says otherwise.
const maxLaneWindows = 8

// closeQuietly releases ports opened on a path that already failed.
func (r *ringPorts) closeQuietly(err error) error {
	if r == nil {
		return err
	}
	return errors.Join(err, r.close())
}
