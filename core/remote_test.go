package core_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// The codes are protocol: PEs and plugins of one version agree on them
// with those of another, so they are pinned here.
func TestErrorCodesArePinned(t *testing.T) {
	want := []error{core.ErrNotSupported, core.ErrInvalid, core.ErrOutOfBounds, core.ErrPeerLost,
		core.ErrTimeout, core.ErrClosed, core.ErrNoMemory}
	require.Equal(t, len(want), int(core.MaxErrorCode))
	for i, s := range want {
		code := uint8(i + 1)
		require.Equal(t, code, core.ErrorCode(s), "%v", s)
		require.Equal(t, code, core.ErrorCode(fmt.Errorf("wrapped: %w", s)), "%v wrapped", s)
		got, ok := core.ErrorOfCode(code)
		require.True(t, ok)
		require.Same(t, s, got)
	}
	require.Zero(t, core.ErrorCode(nil))
	require.Zero(t, core.ErrorCode(errors.New("no sentinel")))
}

// Every byte decodes: to nil, a sentinel, or "unknown", never a panic.
func TestErrorOfCodeEveryByte(t *testing.T) {
	for c := 0; c < 256; c++ {
		s, ok := core.ErrorOfCode(uint8(c))
		switch {
		case c == 0:
			require.True(t, ok)
			require.NoError(t, s)
		case c <= int(core.MaxErrorCode):
			require.True(t, ok, "code %d", c)
			require.Equal(t, uint8(c), core.ErrorCode(s))
		default:
			require.False(t, ok, "code %d", c)
			require.NoError(t, s)
		}
	}
}

func TestRemoteError(t *testing.T) {
	pe := &core.RemoteError{PE: 2, Msg: "mapping heap: out of memory", Kind: core.ErrNoMemory}
	require.Equal(t, "PE 2: mapping heap: out of memory", pe.Error())
	require.ErrorIs(t, pe, core.ErrNoMemory)
	notPE := &core.RemoteError{PE: -1, Msg: "closed", Kind: core.ErrClosed}
	require.Equal(t, "closed", notPE.Error())
	require.ErrorIs(t, &core.OpError{Op: "put", PE: 1, Err: notPE}, core.ErrClosed)
	require.NotErrorIs(t, &core.RemoteError{PE: -1, Msg: "m"}, core.ErrInvalid)
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"tcp", "loopback", "ntb-ring", "my_prov2"} {
		require.NoError(t, core.CheckName(ok), ok)
	}
	for _, bad := range []string{"", "TCP", "a b", "x/y", "é", "tcp,shm", "^tcp"} {
		err := core.CheckName(bad)
		require.ErrorIs(t, err, core.ErrInvalid, "%q", bad)
		require.ErrorContains(t, err, "a-z, 0-9, '-' and '_'", "%q: the error says what is allowed", bad)
	}
}
