package ntbring

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func TestPutGetAroundTheRing(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		doms := openRingT(t, n, nil)
		rs := regions(t, doms, 1<<20)
		each(doms, func(d *domain) {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			require.NoError(t, err)
			for pe := range n {
				msg := []byte{byte(d.rank), byte(pe), 1, 2, 3}
				require.NoError(t, ep.Put(pe, rs[d.rank], 64*d.rank, msg))
			}
			require.NoError(t, ep.Quiet())
		})
		each(doms, func(d *domain) { require.NoError(t, d.Barrier()) })
		for pe, r := range rs {
			for src := range n {
				require.Equal(t, []byte{byte(src), byte(pe), 1, 2, 3}, r.Local()[64*src:64*src+5], "host %d from %d", pe, src)
			}
		}
		each(doms, func(d *domain) {
			ep, err := d.NewEndpoint(core.EndpointOptions{})
			require.NoError(t, err)
			for pe := range n {
				got := make([]byte, 5)
				require.NoError(t, ep.Get(pe, rs[d.rank], 64*d.rank, got))
				require.Equal(t, []byte{byte(d.rank), byte(pe), 1, 2, 3}, got)
				old, err := ep.FetchAtomic(pe, rs[d.rank], 1024, core.AtomicAdd, core.Uint64, 1, 0)
				require.NoError(t, err)
				require.Less(t, old, uint64(n))
			}
		})
	}
}
