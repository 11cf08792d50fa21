package plugin

import (
	"fmt"
	"math"
	"slices"

	"github.com/goshmem/goshmem/core"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
)

// encodeInfo is the wire form of a provider's Info. Of its capabilities
// it claims only those the plugin protocol carries (allCaps): an
// operation the protocol has no call for, such as a quiet of some PEs, a
// batch or a blocked move (which the host's shmem then makes one put or
// get per block), is not the host's to offer.
func encodeInfo(in core.Info) *pb.InfoReply {
	r := &pb.InfoReply{
		Name: in.Name, Description: in.Description, Version: in.Version,
		Caps: uint64(in.Caps & allCaps), Locality: uint32(in.Locality), Progress: uint32(in.Progress),
		Order: uint32(in.Order), ThreadSafe: in.ThreadSafe,
		MaxMsgSize: int64(in.MaxMsgSize), InjectSize: int64(in.InjectSize), Preference: int32(in.Preference),
	}
	for _, s := range in.Atomics {
		r.Atomics = append(r.Atomics, uint32(s))
	}
	for _, p := range in.Params {
		r.Params = append(r.Params, &pb.Param{Name: p.Name, Env: p.Env, Default: p.Default, Help: p.Help})
	}
	return r
}

// allCaps, allOrder and allOps are every bit core defines; the plugin may
// not claim others.
var (
	allCaps  = core.CapRMA | core.CapAtomic | core.CapFetchAtomic | core.CapCompareSwap | core.CapAtomicFloat | core.CapDirectAccess | core.CapLocalAtomics
	allOrder = core.OrderPutPut | core.OrderAtomicAtomic
	allOps   = core.IntOps | core.FloatOps
)

// decodeInfo checks and converts a plugin's Info. Everything the host
// later relies on (enums, sizes, atomic sets) is validated here, so a
// plugin that answers garbage is refused with the field it got wrong.
func decodeInfo(r *pb.InfoReply) (core.Info, error) {
	var in core.Info
	if r == nil {
		return in, garbage("no info")
	}
	switch {
	case r.Caps&^uint64(allCaps) != 0:
		return in, garbage("capability bits %#x beyond the defined %#x", r.Caps, uint64(allCaps))
	case core.Locality(r.Locality) != core.OneHost && core.Locality(r.Locality) != core.AnyHost:
		return in, garbage("locality %d", r.Locality)
	case core.Progress(r.Progress) != core.ProgressAuto && core.Progress(r.Progress) != core.ProgressManual:
		return in, garbage("progress %d", r.Progress)
	case r.Order&^uint32(allOrder) != 0:
		return in, garbage("order bits %#x", r.Order)
	case r.MaxMsgSize <= 0 || r.InjectSize < 0 || r.MaxMsgSize > math.MaxInt || r.InjectSize > math.MaxInt:
		return in, garbage("max message size %d, inject size %d", r.MaxMsgSize, r.InjectSize)
	case len(r.Atomics) > len(in.Atomics):
		return in, garbage("atomic support for %d types (core defines %d)", len(r.Atomics), len(in.Atomics)-1)
	case r.Preference < 0:
		return in, garbage("negative preference %d", r.Preference)
	}
	for t, s := range r.Atomics {
		if core.OpSet(s)&^allOps != 0 || (t == 0 && s != 0) {
			return in, garbage("atomic operations %#x on type %d", s, t)
		}
		in.Atomics[t] = core.OpSet(s)
	}
	in.Name, in.Description, in.Version = r.Name, r.Description, r.Version
	in.Caps, in.Locality, in.Progress = core.Caps(r.Caps), core.Locality(r.Locality), core.Progress(r.Progress)
	in.Order, in.ThreadSafe = core.Order(r.Order), r.ThreadSafe
	in.MaxMsgSize, in.InjectSize, in.Preference = int(r.MaxMsgSize), int(r.InjectSize), int(r.Preference)
	for _, p := range r.Params {
		if p == nil || p.Env == "" {
			return in, garbage("a parameter without a variable")
		}
		in.Params = append(in.Params, core.Param{Name: p.Name, Env: p.Env, Default: p.Default, Help: p.Help})
	}
	return in, nil
}

// hostInfo is what the host advertises for a plugin: the wrapped
// provider's Info under the plugin's name, marked with its origin, as the
// boundary changes it. Peers' regions are mapped in the plugin process, not
// in the PE, so there is no direct access; every put returns once its
// source is copied into the staging area, so every put is an inject.
func hostInfo(in core.Info, name, path string) core.Info {
	wrapped := in.Name
	in.Name = name
	in.Description = fmt.Sprintf("%s (plugin serving %q)", in.Description, wrapped)
	in.Origin = fmt.Sprintf("plugin %s, protocol %d", path, ProtocolVersion)
	in.Caps &^= core.CapDirectAccess
	in.InjectSize = core.Unbounded
	// A new slice: in.Params is the wrapped provider's, which every PE of
	// the process shares, and appending in place would write into its
	// spare capacity from each PE at once.
	in.Params = append(slices.Clip(in.Params), pluginParams(name)...)
	return in
}
