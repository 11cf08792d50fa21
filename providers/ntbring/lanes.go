package ntbring

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

// Several PEs per host: lanes.
//
// An NT device, its two ports and what they have (windows, doorbells,
// scratchpads, DMA channels) belong to a host. When the job runs P PEs on
// each of H hosts, the device is partitioned into P lanes, as Linux's
// ntb_transport partitions one into queue pairs and a Switchtec switch
// into NT partitions: PE i of each host (its index among its host's PEs,
// in job order) holds lane i of its host's device, and the lane-i PEs of
// all hosts form a ring of H hosts that runs the ring protocol exactly
// as one PE per host does. A transfer to PE j of host g leaves on the
// sender's own lane and is landed or served by the lane's node on host g
// straight in PE j's memory (the descriptor's destination-PE word), which
// that node maps: the memory of a host's PEs is the host's. Answers come
// back on the same lane. See docs/ntbring.md.

// topology sets the domain's ring from the job's host map: one PE per
// host (or every PE on one host, the emulation of a ring on one machine)
// is a ring of the job's PEs; several PEs on each of several hosts are
// lanes, which need the same number of PEs on every host.
func (d *domain) topology(hosts core.HostMap, s settings) error {
	d.rank, d.npes, d.lane, d.lanes = d.pe, d.size, 0, 1
	if len(hosts.PEs) < 2 || !hosts.Shared() {
		return nil
	}
	per := len(hosts.PEs[0])
	for h, pes := range hosts.PEs {
		if len(pes) != per {
			return fmt.Errorf("host %d runs %d PEs and host 0 runs %d: with several PEs per host the ring needs the same number on every host (one lane of the device per PE): %w",
				h, len(pes), per, core.ErrNotSupported)
		}
	}
	if per > maxLanes {
		return fmt.Errorf("%d PEs per host: at most %d lanes of a host's device: %w", per, maxLanes, core.ErrNotSupported)
	}
	if s.protocol != protoRing {
		return &core.EnvError{Var: paramProtocol.Env, Value: s.protocol,
			Allowed: fmt.Sprintf("%q: the %q protocol runs one PE per host, and this job runs %d on each", protoRing, protoSeed, per)}
	}
	d.npes, d.lanes = len(hosts.PEs), per
	d.hostOfPE, d.localOf = make([]int, d.size), make([]int, d.size)
	d.peAt = make([][]int, d.npes)
	for h, pes := range hosts.PEs {
		d.peAt[h] = pes
		for i, pe := range pes {
			d.hostOfPE[pe], d.localOf[pe] = h, i
		}
	}
	d.rank, d.lane = d.hostOfPE[d.pe], d.localOf[d.pe]
	return nil
}

// maxLanes is the most PEs per host: a lane's destination PE travels in
// one byte, and the emulated device partitions into at most this many.
const maxLanes = 16

// hostOf is job PE pe's host: its place in the ring.
func (d *domain) hostOf(pe int) int {
	if d.lanes <= 1 {
		return pe
	}
	return d.hostOfPE[pe]
}

// where is job PE pe's host and its index among the host's PEs.
func (d *domain) where(pe int) (host, local int) {
	if d.lanes <= 1 {
		return pe, 0
	}
	return d.hostOfPE[pe], d.localOf[pe]
}

// RegisterHostRegion registers, with several PEs per host, one region of
// every PE of this host at once: mine is this PE's part, local[i] that of
// the host's i-th PE as this process maps it (local[lane] is mine). The
// lane's node lands and serves transfers to any of them there. With one
// PE per host it is RegisterRegion. The composite with loopback calls
// it, loopback having mapped the host's PEs' regions.
func (d *domain) RegisterHostRegion(mine []byte, local [][]byte) (core.Region, error) {
	if d.lanes <= 1 {
		return d.RegisterRegion(mine)
	}
	const op = "register region"
	idx, err := d.agreeRegister(op, mine)
	if err != nil {
		return nil, err
	}
	if idx >= maxRegions {
		return nil, d.opErr(op, fmt.Errorf("region %d: at most %d regions: %w", idx, maxRegions, core.ErrInvalid))
	}
	if len(local) != d.lanes {
		err = fmt.Errorf("region %d: the memory of %d PEs of this host, which runs %d: %w", idx, len(local), d.lanes, core.ErrInvalid)
	}
	r := &region{dom: d, idx: idx, size: len(mine), mem: mine, release: func() error { return nil }}
	if len(mine) == 0 {
		r.mem = nil
	}
	if err == nil {
		r.host = make([]*region, d.lanes)
		for i, m := range local {
			switch {
			case i == d.lane:
				r.host[i] = r
			case len(m) != len(mine):
				err = fmt.Errorf("region %d: PE %d of this host maps %d bytes where this PE has %d: %w", idx, i, len(m), len(mine), core.ErrInvalid)
			case len(m) > 0:
				r.host[i] = &region{dom: d, idx: idx, size: len(m), mem: m, release: func() error { return nil }}
			}
		}
	}
	if p, ok := d.proto.(*ringProto); ok && len(mine) > 0 {
		var release func() error
		release, err = p.windowHostRegion(idx, mine, local, err)
		if release != nil {
			r.release = release
		}
	}
	return d.enterRegion(op, r, err)
}

// windowHostRegion registers the memory of this host's PEs' parts of
// region idx with the device, so that the neighbours' puts land in it
// through a window, as a region the device made does at one PE per host
// (exportRegion): this PE's part moves in place onto memory of its lane
// (AdoptMemory), the other PEs of the host map their views of it onto
// the same (JoinMemory), and this lane's node points an inbound window of
// each port at every PE's part (ringProto.window), so a put to any PE of
// the host lands through the window onto it. The memory stays where it was, loopback's and the
// program's as before; only the file under it changes. Where the device
// cannot, or the region has no window, nothing changes and puts come
// through the ring. It runs the same agreements on every PE, err (this
// PE's failure so far) included, and returns how to release the
// registration.
func (p *ringProto) windowHostRegion(idx int, mine []byte, local [][]byte, err error) (func() error, error) {
	d := p.d
	if p.ports.adoptMemory == nil || p.ports.joinMemory == nil || !p.canWindow(idx, len(mine)) {
		return nil, err
	}
	var m ntb.Memory
	if err == nil {
		m, err = p.ports.adoptMemory(d.lane, idx, mine)
	}
	if err = core.Agree(d.boot, err); err != nil {
		if m != nil {
			err = errors.Join(err, m.Close())
		}
		return nil, err
	}
	mems := make([]ntb.Memory, len(local))
	mems[d.lane] = m
	for i, b := range local {
		if i != d.lane {
			if mems[i], err = p.ports.joinMemory(i, idx, b); err != nil {
				break
			}
		}
	}
	p.exportMu.Lock()
	for i, mi := range mems {
		if mi != nil {
			p.exported[p.window(idx, i)] = mi
		}
	}
	p.exportMu.Unlock()
	for _, l := range p.all() {
		for i, mi := range mems {
			if mi != nil {
				p.exportWindow(l.port, p.window(idx, i), mi)
			}
		}
	}
	return func() error {
		p.exportMu.Lock()
		for i := range mems {
			delete(p.exported, p.window(idx, i))
		}
		p.exportMu.Unlock()
		return m.Close() // the others' memories are views: theirs to close
	}, err
}

// canWindow says whether region idx of size bytes gets windows, one per
// PE of the host: the ports have them, they are large enough and the
// size whole pages. Every PE answers the same, from the agreed size and
// the job's device.
func (p *ringProto) canWindow(idx, size int) bool {
	port, last := p.link(ntb.Left).port, p.window(idx, p.d.lanes-1)
	if size == 0 || last >= port.MWCount() {
		return false
	}
	_, sizeAlign, max, err := port.MWAlign(last)
	return err == nil && int64(size)%sizeAlign == 0 && int64(size) <= max
}

// errNeedsHost is what ntbring alone answers, with several PEs per host,
// for what only the composite with loopback gives it: the memory of the
// other PEs of the host.
func (d *domain) errNeedsHost(what string) error {
	return fmt.Errorf("%s: ntbring with %d PEs on each host carries only pairs on different hosts, and needs the memory of every PE of its host; "+
		"it runs composed with loopback (%s unset or 1), which serves the PEs of one host: %w", what, d.lanes, core.EnvHybrid, core.ErrNotSupported)
}
