package emu

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/internal/sys"
)

// A host with several PEs: lanes of one device.
//
// Hardware has one NT device per host, with its two ports; the PEs of a
// host share it. Options.Lanes > 1 partitions every host's device into
// that many lanes, one per PE, as ntb_transport partitions a device into
// queue pairs and a Switchtec switch into NT partitions: each lane has
// its own doorbell bits, scratchpads, windows and DMA channels (modelled
// here as lane i's own link files, "ntb-[tag-]laneI-link<k>", with the
// geometry of a whole port), and the PE of lane i on one host talks to
// the PE of lane i on the next. What belongs to the link, not to a lane,
// is shared: the link words of lane 0's file (forced down, and the count
// of forced downs) are the link's, every lane obeys them, and a fault
// (GOSHMEM_NTB_FAULT) is injected once, by lane 0, so cutting link k cuts
// it for every PE of both hosts. A killed host (host=H:kill) is lane 0's
// process: the PE of lane 0 on host H.
//
// Not modelled: the lanes of one port each pace their DMA at the link's
// bandwidth, where hardware would share it.

// MaxLanes is the most lanes a device is partitioned into.
const MaxLanes = 16

// laneTag is the tag of lane's files.
func laneTag(tag string, lane int) string {
	if tag == "" {
		return fmt.Sprintf("lane%d", lane)
	}
	return fmt.Sprintf("%s-lane%d", tag, lane)
}

// openLane is Open for lane o.Lane of host id's device: it creates and
// opens the lane's link files as Open does, and on a lane other than 0
// also maps lane 0's files of the same two links, whose link words it
// obeys.
func openLane(dir string, id, n int, o Options) (*Host, error) {
	zero := o
	zero.Tag = laneTag(o.Tag, 0)
	o.Tag = laneTag(o.Tag, o.Lane)
	right, rhdr, err := createLink(dir, id, n, &o)
	if err != nil {
		return nil, err
	}
	lk := (id + n - 1) % n
	left, lhdr, err := openLink(dir, lk, n, &o, o.AttachTimeout)
	if err != nil {
		return nil, errors.Join(err, sys.Unmap(right), removeLink(LinkPath(dir, o.Tag, id)))
	}
	var sharedRight, sharedLeft []byte
	if o.Lane != 0 {
		if sharedRight, _, err = openLink(dir, id, n, &zero, o.AttachTimeout); err == nil {
			sharedLeft, _, err = openLink(dir, lk, n, &zero, o.AttachTimeout)
		}
		if err != nil {
			err = fmt.Errorf("ntb emu: lane %d of host %d: lane 0's link: %w", o.Lane, id, err)
			if sharedRight != nil {
				err = errors.Join(err, sys.Unmap(sharedRight))
			}
			return nil, errors.Join(err, sys.Unmap(right), sys.Unmap(left), removeLink(LinkPath(dir, o.Tag, id)))
		}
	}
	h, err := attachShared(dir, id, n, &o, right, rhdr, left, lhdr, sharedRight, sharedLeft, false)
	if h != nil {
		h.devTag = zero.Tag[:len(zero.Tag)-len("lane0")]
	}
	return h, err
}
