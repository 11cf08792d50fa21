package hybrid_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// Over tcp the composite reserves its regions' memory where loopback
// does, commits what each PE asks of its own part, and carries puts
// between hosts into committed memory. Over ntbring, whose lanes move
// the memory onto the device's, the region is committed whole, and
// Commit has nothing to do.
func TestReservedRegion(t *testing.T) {
	const size = 8 << 20
	for _, c := range []struct {
		spec     string
		reserved bool
	}{{"tcp", true}, {"ntbring", false}} {
		t.Run(c.spec, func(t *testing.T) {
			hosts := []string{"a", "a", "b", "b"}
			var unseen atomic.Value
			// Checks within look do not stop the PE: every PE makes the
			// same collective calls whatever it found.
			_, errs := openLook(t, c.spec, hosts, nil, func(pe int, d core.Domain) {
				cm, ok := d.(core.Committer)
				if !assert.True(t, ok, "%T is a core.Committer", d) {
					return
				}
				r, err := cm.NewReservedRegion(size)
				if !assert.NoError(t, err) {
					return
				}
				local := r.Local()
				assert.Len(t, local, size)
				blocks := func(lo, hi int64, what string) {
					got, err := sys.MappedBlocks(mem.Addr(local))
					if err != nil {
						unseen.Store(err)
						return
					}
					assert.True(t, got >= lo && got <= hi, "PE %d, %s: %d bytes allocated, want %d to %d", pe, what, got, lo, hi)
				}
				if c.reserved {
					blocks(0, 0, "reserved")
				} else {
					blocks(size, size+64<<10, "committed whole")
				}
				assert.NoError(t, cm.Commit(r, 0, 1<<20))
				if c.reserved {
					blocks(1<<20, 1<<20+64<<10, "after a commit of 1 MiB")
				}
				assert.ErrorIs(t, cm.Commit(r, size-1, 2), core.ErrOutOfBounds)
				assert.ErrorIs(t, cm.Commit(struct{ core.Region }{r}, 0, 1), core.ErrInvalid)

				// A collective call: no PE puts into a part its owner has
				// not committed yet, as in shmem, where a block is put into
				// once every PE has it.
				_, err = d.NewRegion(0)
				assert.NoError(t, err)
				ep, err := d.NewEndpoint(core.EndpointOptions{})
				if !assert.NoError(t, err) {
					return
				}
				other := (pe + 2) % len(hosts) // on the other host
				assert.NoError(t, ep.PutValue(other, r, 4096, uint64(pe+1), 8))
				assert.NoError(t, ep.Quiet())
				v, err := ep.GetValue(other, r, 4096, 8)
				assert.NoError(t, err)
				assert.Equal(t, uint64(pe+1), v, "PE %d: the put to PE %d", pe, other)
				assert.NoError(t, ep.Close())
			})
			if err := unseen.Load(); err != nil {
				t.Logf("the region's file is not to be seen, so its size is not checked: %v", err)
			}
			for pe := range hosts {
				require.NoError(t, errs[pe], "PE %d", pe)
			}
		})
	}
}
