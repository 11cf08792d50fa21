package ntbring

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// PutValue and GetValue of every size reach every host of a ring of
// five, a neighbour's window (stores), a host two hops away (the ring)
// and the own host alike, with both protocols.
func TestValuesAroundTheRing(t *testing.T) {
	for _, proto := range benchProtocols {
		doms := openRingT(t, 5, map[string]string{paramProtocol.Env: proto})
		rs := regions(t, doms, 4096)
		ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
		require.NoError(t, err)
		for pe := range doms {
			for i, size := range []int{1, 2, 4, 8} {
				off := 64 * (i + 1)
				v := uint64(0x0102030405060708) >> (64 - 8*size)
				v += uint64(pe)
				require.NoError(t, ep.PutValue(pe, rs[0], off, v, size), "%s: PE %d, size %d", proto, pe, size)
				require.NoError(t, ep.Quiet())
				require.Equal(t, v, mem.LoadValue(rs[pe].Local(), off, size), "%s: PE %d, size %d", proto, pe, size)
				got, err := ep.GetValue(pe, rs[0], off, size)
				require.NoError(t, err)
				require.Equal(t, v, got, "%s: PE %d, size %d", proto, pe, size)
			}
		}
	}
}

// A PutValue, and a put of 8 bytes, to a neighbour's window allocate
// nothing, and neither does the quiet after them.
func TestSmallPutsDoNotAllocate(t *testing.T) {
	doms := openRingT(t, 2, map[string]string{paramProtocol.Env: protoRing})
	rs := regions(t, doms, 4096)
	ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)
	src := make([]byte, 8)
	i := uint64(0)
	allocs := testing.AllocsPerRun(100, func() {
		i++
		if err := ep.PutValue(1, rs[0], 64, i, 8); err != nil {
			t.Fatal(err)
		}
		if err := ep.PutValue(1, rs[0], 72, i, 4); err != nil {
			t.Fatal(err)
		}
		if err := ep.Put(1, rs[0], 128, src); err != nil {
			t.Fatal(err)
		}
		if err := ep.Quiet(); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, i, mem.LoadValue(rs[1].Local(), 64, 8))
}
