package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// Durations have bounds: a nanosecond timeout expires before any peer can
// answer, a thousand hours is a hang.
func TestParseDurationVarBounds(t *testing.T) {
	d, err := core.ParseDurationVar("X", " 250ms ", 100*time.Millisecond, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 250*time.Millisecond, d)
	for _, bad := range []string{"1ns", "99ms", "2h", "1000h", "soon", "", "-1s"} {
		_, err := core.ParseDurationVar("X", bad, 100*time.Millisecond, time.Hour)
		requireEnvError(t, err, "X", bad, "from 100ms to 1h0m0s")
	}
	d, err = core.ParseDurationVar("X", "0", 0, time.Second)
	require.NoError(t, err)
	require.Zero(t, d)
	_, err = core.ParseDurationVar("X", "2s", 0, time.Second)
	requireEnvError(t, err, "X", "2s", "0 or a duration up to 1s")

	cfg := &core.Config{Env: func(k string) (string, bool) { return "1ns", k == "GOSHMEM_T_D" }}
	_, err = cfg.Duration(core.NewParam("t", "d", "1s", ""))
	requireEnvError(t, err, "GOSHMEM_T_D", "1ns", "from 1ms to 24h0m0s")
}
