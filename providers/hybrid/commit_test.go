package hybrid_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// fileBlocks is how much of its file system the file mapped at m takes:
// the blocks stat counts of the file behind m's mapping, found through
// /proc/self/map_files. It skips the test where that is not readable.
func fileBlocks(t *testing.T, m []byte) int64 {
	t.Helper()
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	f, err := os.Open("/proc/self/maps")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		span, _, _ := strings.Cut(sc.Text(), " ")
		var lo, hi uintptr
		if _, err := fmt.Sscanf(span, "%x-%x", &lo, &hi); err != nil || addr < lo || addr >= hi {
			continue
		}
		st, err := os.Stat("/proc/self/map_files/" + span)
		if err != nil {
			t.Skipf("the file behind a mapping is not to be seen here: %v", err)
		}
		return st.Sys().(*syscall.Stat_t).Blocks * 512
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}

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
			_, errs := openLook(t, c.spec, hosts, nil, func(pe int, d core.Domain) {
				cm, ok := d.(core.Committer)
				require.True(t, ok, "%T is a core.Committer", d)
				r, err := cm.NewReservedRegion(size)
				require.NoError(t, err)
				local := r.Local()
				require.Len(t, local, size)
				if c.reserved {
					require.Zero(t, fileBlocks(t, local), "PE %d: reserved", pe)
				} else {
					require.GreaterOrEqual(t, fileBlocks(t, local), int64(size), "PE %d: committed whole", pe)
				}
				require.NoError(t, cm.Commit(r, 0, 1<<20))
				if c.reserved {
					got := fileBlocks(t, local)
					require.True(t, got >= 1<<20 && got < 1<<20+64<<10, "PE %d: %d bytes after a commit of 1 MiB", pe, got)
				}
				require.ErrorIs(t, cm.Commit(r, size-1, 2), core.ErrOutOfBounds)
				require.ErrorIs(t, cm.Commit(struct{ core.Region }{r}, 0, 1), core.ErrInvalid)

				ep, err := d.NewEndpoint(core.EndpointOptions{})
				require.NoError(t, err)
				other := (pe + 2) % len(hosts) // on the other host
				require.NoError(t, ep.PutValue(other, r, 4096, uint64(pe+1), 8))
				require.NoError(t, ep.Quiet())
				v, err := ep.GetValue(other, r, 4096, 8)
				require.NoError(t, err)
				require.Equal(t, uint64(pe+1), v, "PE %d: the put to PE %d", pe, other)
				require.NoError(t, ep.Close())
			})
			for pe := range hosts {
				require.NoError(t, errs[pe], "PE %d", pe)
			}
		})
	}
}
