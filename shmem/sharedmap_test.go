package shmem_test

import (
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/shmem"
)

// TestSharedMap: on loopback the World forwards the provider's map: the
// heap and each registered segment, every PE's part addressed as mapped
// here, so a store through a peer's address is that peer's memory; and
// the map goes away with the World.
func TestSharedMap(t *testing.T) {
	const n = 3
	world(t, n, nil, nil, func(pe int, w *shmem.World, err error) {
		require.NoError(t, err)
		static, err := syscall.Mmap(-1, 0, 2*syscall.Getpagesize(), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
		require.NoError(t, err)
		defer func() { require.NoError(t, syscall.Munmap(static)) }()
		require.NoError(t, w.RegisterStatic(static))

		require.Nil(t, w.WindowMap(), "loopback maps its peers: it offers no windows")
		m := w.SharedMap()
		require.NotNil(t, m)
		require.Equal(t, "goshmem-loopback", m.Protocol)
		require.Positive(t, m.Version)
		require.Len(t, m.Control, n)
		require.Len(t, m.Segments, 2, "the heap and the static segment")
		for _, s := range m.Segments {
			require.Len(t, s.Peers, n)
			require.Equal(t, s.Base, s.Peers[pe])
		}
		heap, st := m.Segments[0], m.Segments[1]
		require.NotEqual(t, heap.Index, st.Index)
		require.Equal(t, mem.Addr(static), st.Base)
		require.Equal(t, len(static), st.Size)
		require.Equal(t, 0, st.Start)
		require.Equal(t, len(static), st.End)
		require.Equal(t, w.HeapSize(), heap.End-heap.Start)
		require.LessOrEqual(t, heap.End, heap.Size)

		x, err := shmem.Malloc[uint64](w, 1)
		require.NoError(t, err)
		off := mem.Addr(x) - heap.Base
		require.GreaterOrEqual(t, off, uintptr(heap.Start))
		require.Less(t, off, uintptr(heap.End))

		// The map names the very memory shmem_ptr hands out, for every
		// PE: each PE stores its number into its right neighbour's x and
		// into the second page of its static segment through it.
		page := syscall.Getpagesize()
		svar := mem.Slice[uint64](static[page : page+8])
		for q := range n {
			px, ps := shmem.Ptr(w, x, q), shmem.Ptr(w, svar, q)
			require.Equal(t, heap.Peers[q]+off, mem.Addr(px), "PE %d's x", q)
			require.Equal(t, st.Peers[q]+uintptr(page), mem.Addr(ps), "PE %d's static word", q)
		}
		right := (pe + 1) % n
		atomic.StoreUint64(&shmem.Ptr(w, x, right)[0], uint64(pe+1))
		atomic.StoreUint64(&shmem.Ptr(w, svar, right)[0], uint64(pe+10))
		require.NoError(t, w.BarrierAll())
		left := (pe + n - 1) % n
		require.Equal(t, uint64(left+1), atomic.LoadUint64(&x[0]))
		require.Equal(t, uint64(left+10), atomic.LoadUint64(&svar[0]))
		require.NoError(t, w.BarrierAll())

		require.NoError(t, w.Finalize())
		require.Nil(t, w.SharedMap())
	})
}
