package ntbring

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb/emu"
	"github.com/goshmem/goshmem/internal/ntb/sim"
)

// Name is the provider's registered name.
const Name = "ntbring"

func init() { core.Register(provider{}) }

type provider struct{}

func (provider) Name() string { return Name }

func (provider) Info() core.Info {
	return core.Info{
		Name: Name,
		Description: "hosts in a switchless ring of PCIe non-transparent bridges (an emulated PLX NT port here); " +
			"transfers are relayed host to host, atomics run at the owner",
		Version: "1",
		Caps: core.CapRMA | core.CapAtomic | core.CapFetchAtomic | core.CapCompareSwap |
			core.CapAtomicFloat | core.CapLocalAtomics | core.CapPEQuiet | core.CapBlocks,
		Atomics:  core.FullAtomics(),
		Locality: core.AnyHost,
		// Workers and forwarders move data without the caller.
		Progress: core.ProgressAuto,
		// Pieces of transfers to one host take different workers and may
		// overtake each other: no ordering without a fence.
		Order:      0,
		ThreadSafe: true,
		MaxMsgSize: core.Unbounded,
		// A put returns once its data has left through the first link.
		InjectSize: 0,
		// A transfer's metadata holds a 32-bit offset.
		MaxRegionSize: maxRegionSize,
		// Used only by name: on one host the ring is an emulation, and
		// loopback moves the same bytes faster.
		Preference: 0,
		Params: append(append([]core.Param{paramProtocol, paramWorkers, paramSlot, paramTimeout, paramBarrier, paramDevice},
			emu.Params()...), sim.Params()...),
		Origin: "built-in",
	}
}

// Open joins this host to the ring: PE i is host i, or, with several
// PEs on each host, the node of its lane on its host (lanes.go). It reads the
// settings, attaches to the ring's device and lets the protocol set the
// links up. Every step that can fail on one host ends in core.Agree, so
// all hosts return an error together.
func (provider) Open(cfg *core.Config) (core.Domain, error) {
	b := cfg.Bootstrap
	if b == nil {
		return nil, fmt.Errorf("no bootstrap in the configuration: %w", core.ErrInvalid)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d := &domain{pe: b.Rank(), size: b.Size(), boot: b, dir: cfg.JobDir(), log: log,
		pending: newPending(), endpoints: map[*endpoint]struct{}{}}
	hosts, err := core.GatherHosts(cfg)
	if err != nil {
		return nil, err
	}
	s, err := readSettings(cfg)
	if err == nil {
		err = d.topology(hosts, s)
		d.topo = ringOf(d.npes)
	}
	if err == nil && d.npes > maxHosts {
		err = fmt.Errorf("a ring of %d hosts: at most %d: %w", d.npes, maxHosts, core.ErrNotSupported)
	}
	if err == nil && d.lanes > 1 {
		// Alone, ntbring cannot serve the pairs of PEs of one host.
		if on, herr := cfg.HybridSetting(); herr != nil {
			err = herr
		} else if !on {
			err = d.errNeedsHost("open")
		}
	}
	if err == nil {
		_, err = cfg.MakeJobDir()
	}
	if err := core.Agree(b, err); err != nil {
		return nil, err
	}
	d.s = s
	d.bufs.size = s.slotSize
	// PE 0's random number names this domain's files, so two domains of
	// one job never meet in the job directory.
	all, err := b.Allgather(binary.LittleEndian.AppendUint64(nil, rand.Uint64()))
	if err != nil {
		return nil, fmt.Errorf("exchange of the domain id: %w", err)
	}
	if len(all[0]) != 8 {
		return nil, fmt.Errorf("PE 0 sent a domain id of %d bytes: %w", len(all[0]), core.ErrInvalid)
	}
	d.id = fmt.Sprintf("%016x", binary.LittleEndian.Uint64(all[0]))
	if d.npes == 1 {
		return d, nil // a ring of one: all memory is local
	}

	ports, err := openRing(cfg, d.rank, d.npes, d.lane, d.lanes, d.id)
	if err == nil {
		d.topo = ports.topo
		err = checkTopology(ports.topo, s)
	}
	if err := core.Agree(b, err); err != nil {
		return nil, ports.closeQuietly(err)
	}
	// newProtocol sets d.proto itself, before it starts goroutines.
	_, err = newProtocol(d, ports, s)
	if err := core.Agree(b, err); err != nil {
		return nil, ports.closeQuietly(err)
	}
	return d, nil
}

// checkTopology refuses what the ring protocol alone does on a torus:
// the seeds' protocol and barrier go round a ring, and so does the
// repair of a cut link.
func checkTopology(t topology, s settings) error {
	if !t.torus() {
		return nil
	}
	switch {
	case s.protocol != protoRing:
		return fmt.Errorf("the fabric is a %s: %s=%s runs on a ring only; use %q: %w", t, paramProtocol.Env, s.protocol, protoRing, core.ErrNotSupported)
	case s.barrier != barrierDissemination:
		return fmt.Errorf("the fabric is a %s: %s=%s runs on a ring only; use %q: %w", t, paramBarrier.Env, s.barrier, barrierDissemination, core.ErrNotSupported)
	}
	return nil
}
