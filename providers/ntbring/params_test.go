package ntbring

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func TestSettings(t *testing.T) {
	cfg := &core.Config{Env: func(string) (string, bool) { return "", false }}
	s, err := readSettings(cfg)
	require.NoError(t, err)
	require.Equal(t, settings{protocol: protoRing, barrier: barrierDissemination, workers: 2, slotSize: 256 << 10, timeout: 5 * time.Second, cpus: runtime.NumCPU()}, s)

	cfg.Env = testEnv("", map[string]string{paramWorkers.Env: "8", paramSlot.Env: "1M", paramTimeout.Env: "250ms", paramProtocol.Env: " SEED ", paramBarrier.Env: "Ring", core.EnvCPUs: "64"})
	s, err = readSettings(cfg)
	require.NoError(t, err)
	require.Equal(t, settings{protocol: protoSeed, barrier: barrierRing, workers: 8, slotSize: 1 << 20, timeout: 250 * time.Millisecond, cpus: 64}, s)

	for v, val := range map[string]string{
		paramProtocol.Env: "fast",
		paramWorkers.Env:  "9",
		paramSlot.Env:     "5000",
		paramTimeout.Env:  "-1s",
		paramBarrier.Env:  "tree",
		core.EnvCPUs:      "0",
	} {
		cfg.Env = testEnv("", map[string]string{v: val})
		_, err := readSettings(cfg)
		var ee *core.EnvError
		require.ErrorAs(t, err, &ee, v)
		require.Equal(t, v, ee.Var)
		require.ErrorIs(t, err, core.ErrInvalid)
	}
	cfg.Env = testEnv("", map[string]string{paramWorkers.Env: "0"})
	_, err = readSettings(cfg)
	require.ErrorContains(t, err, "from 1 to 8")
	// A timeout shorter than any answer takes, or one that is a hang.
	for _, val := range []string{"1ns", "99ms", "1000h"} {
		cfg.Env = testEnv("", map[string]string{paramTimeout.Env: val})
		_, err = readSettings(cfg)
		require.ErrorContains(t, err, paramTimeout.Env+`="`+val+`" is malformed: allowed a duration from 100ms to 1h0m0s`)
	}
}

func TestInfoListsParams(t *testing.T) {
	info := provider{}.Info()
	for _, name := range []string{"PROTOCOL", "WORKERS", "SLOT_SIZE", "TIMEOUT", "BARRIER"} {
		p, ok := info.Param(name)
		require.True(t, ok, name)
		require.Equal(t, "GOSHMEM_NTBRING_"+name, p.Env)
	}
	envs := map[string]bool{}
	for _, p := range info.Params {
		envs[p.Env] = true
	}
	require.True(t, envs["GOSHMEM_NTB_MODEL"], "the device's parameters are listed too")
}

func TestOpenRejectsBadSettings(t *testing.T) {
	_, err := openRingErr(t, 3, map[string]string{paramWorkers.Env: "12"})
	var ee *core.EnvError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, paramWorkers.Env, ee.Var)
}
