package conformance

import (
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// capInterface pairs a capability bit with the optional interface that
// delivers it: shmem reads some capabilities as Info.Caps bits and uses
// them through type assertions, so the two must agree on every provider.
type capInterface struct {
	cap  core.Caps
	name string
	has  func(d core.Domain) bool
	// implied: the bit promises the interface, but the interface may be
	// there without the bit, where a composite passes it on and is only
	// as good as its transports (hybrid's core.PEQuieter and
	// core.BlockMover).
	implied bool
}

// capInterfaces lists every such pair. A new optional interface that
// stands for a capability bit joins it here.
var capInterfaces = []capInterface{
	{cap: core.CapDirectAccess, name: "core.DirectAccess", has: func(d core.Domain) bool { _, ok := d.(core.DirectAccess); return ok }},
	{cap: core.CapPEQuiet, name: "core.PEQuieter", has: endpointIs[core.PEQuieter], implied: true},
	{cap: core.CapBatch, name: "core.Batcher", has: endpointIs[core.Batcher]},
	{cap: core.CapBlocks, name: "core.BlockMover", has: endpointIs[core.BlockMover], implied: true},
}

// endpointIs says whether an endpoint of d implements I.
func endpointIs[I any](d core.Domain) bool {
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	if err != nil {
		return false
	}
	defer func() { _ = ep.Close() }()
	_, ok := ep.(I)
	return ok
}

func capsCases() []Case {
	return []Case{
		{Name: "Caps/AgreeWithInterfaces", Needs: core.CapRMA, MaxPEs: 2, Core: caseCapsAgree},
	}
}

// caseCapsAgree fails where a provider advertises a capability without
// implementing its interface, or implements the interface without
// advertising it, and where a domain that says it maps its peers' memory
// does not hand out a peer's part of a region.
func caseCapsAgree(t *T, j CoreJob) {
	for _, ci := range capInterfaces {
		advertised, implemented := j.Info.Caps.Has(ci.cap), ci.has(j.Domain)
		if ci.implied && implemented {
			continue
		}
		require.Equal(t, advertised, implemented,
			"provider %s: capability %s advertised %v, but interface %s implemented %v", j.Info.Name, ci.cap, advertised, ci.name, implemented)
	}
	d := j.Domain
	da, ok := d.(core.DirectAccess)
	if !ok {
		return
	}
	const size = 1 << 12
	r, err := d.NewRegion(size)
	require.NoError(t, err)
	me, n := d.Rank(), d.Size()
	peer := da.PeerBytes((me+1)%n, r)
	require.Len(t, peer, size, "DirectAccess gives a peer's whole part of a region")
	require.NoError(t, j.Boot.Barrier())
	peer[me] = byte(1 + me)
	require.NoError(t, j.Boot.Barrier())
	left := (me + n - 1) % n
	require.Equal(t, byte(1+left), r.Local()[left], "a store into a peer's part lands in its Local")
	require.NoError(t, j.Boot.Barrier())
}
