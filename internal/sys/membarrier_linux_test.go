//go:build linux

package sys

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGlobalBarrier(t *testing.T) {
	err := RegisterGlobalBarrier()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no membarrier here: %v", err)
	}
	require.NoError(t, err)
	require.NoError(t, RegisterGlobalBarrier(), "registering twice")
	require.NoError(t, GlobalBarrier())
}

func TestMembarrierUnknownCommand(t *testing.T) {
	_, err := membarrier(1 << 30)
	require.ErrorIs(t, err, errors.ErrUnsupported, "an unknown command is EINVAL")
}

func BenchmarkGlobalBarrier(b *testing.B) {
	if err := RegisterGlobalBarrier(); err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = GlobalBarrier()
	}
}
