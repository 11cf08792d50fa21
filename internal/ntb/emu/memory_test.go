package emu

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

// A window pointed at registered memory is that memory: the peer's
// stores and DMA through its outbound window land in it, on either port
// of the host, and its file goes with Close.
func TestWindowOntoMemory(t *testing.T) {
	r := newRing(t, 3, fastOptions())
	h := r.Hosts[1]
	m, err := h.NewMemory(10000) // not a page multiple: the window rounds up
	require.NoError(t, err)
	require.Len(t, m.Bytes(), 10000)
	var _ ntb.WindowExporter = h.Left
	require.NoError(t, h.Left.MWSetTransMem(1, m))
	require.NoError(t, h.Right.MWSetTransMem(1, m))

	fromLeft, err := r.Hosts[0].Right.PeerMW(1)
	require.NoError(t, err)
	require.Len(t, fromLeft, 12288)
	fromLeft[5] = 42
	require.Equal(t, byte(42), m.Bytes()[5])

	fromRight, err := r.Hosts[2].Left.PeerMW(1)
	require.NoError(t, err)
	ch, err := r.Hosts[2].Left.DMA(0)
	require.NoError(t, err)
	done := make(chan error, 1)
	require.NoError(t, ch.Submit(fromRight[100:], []byte("landed"), func(err error) { done <- err }))
	require.NoError(t, <-done)
	require.Equal(t, "landed", string(m.Bytes()[100:106]))

	path := m.(*memory).path
	require.NoError(t, h.Left.MWClearTrans(1))
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "Close is idempotent")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestWindowOntoMemoryRejects(t *testing.T) {
	o := fastOptions()
	o.MWMax = 8 << 10
	r := newRing(t, 2, o)
	h := r.Hosts[0]
	_, err := h.NewMemory(0)
	require.Error(t, err)
	m, err := h.NewMemory(16 << 10)
	require.NoError(t, err)
	defer m.Close()
	require.ErrorIs(t, h.Right.MWSetTransMem(1, m), ntb.ErrRange, "larger than the window")
	require.ErrorIs(t, h.Right.MWSetTransMem(9, m), ntb.ErrRange, "no such window")
	require.ErrorIs(t, h.Right.MWSetTransMem(1, foreignMemory{}), ntb.ErrRange, "not registered here")
}

type foreignMemory struct{}

func (foreignMemory) Bytes() []byte { return make([]byte, 4096) }
func (foreignMemory) Close() error  { return nil }
