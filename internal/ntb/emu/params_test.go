package emu

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/ntb"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestOptionsFromEnvDefaults(t *testing.T) {
	o, err := OptionsFromEnv(env(), 4)
	require.NoError(t, err)
	require.Equal(t, DefaultOptions(), o)
	require.Equal(t, Gen3x8, o.Model)
	require.False(t, o.Model.Off())
	for _, p := range Params() {
		require.Regexp(t, `^GOSHMEM_NTB_[A-Z_]+$`, p.Env)
		require.NotEmpty(t, p.Help)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	o, err := OptionsFromEnv(env("GOSHMEM_NTB_MODEL", "off", "GOSHMEM_NTB_WINDOWS", "4",
		"GOSHMEM_NTB_MW_SIZE", "1M", "GOSHMEM_NTB_DEAD_AFTER", "250ms",
		"GOSHMEM_NTB_FAULT", "link=1:down@10ms; link=1:up@20ms;host=0:kill@1s"), 3)
	require.NoError(t, err)
	require.True(t, o.Model.Off())
	require.Equal(t, 4, o.Windows)
	require.Equal(t, int64(1<<20), o.MWMax)
	require.Equal(t, 250*time.Millisecond, o.DeadAfter)
	require.Equal(t, []Fault{{FaultLinkDown, 1, 10 * time.Millisecond}, {FaultLinkUp, 1, 20 * time.Millisecond},
		{FaultKill, 0, time.Second}}, o.Faults)

	o, err = OptionsFromEnv(env("GOSHMEM_NTB_DMA_MBPS", "3250", "GOSHMEM_NTB_DMA_SETUP", "0",
		"GOSHMEM_NTB_SPAD_READ", "2us"), 2)
	require.NoError(t, err)
	require.Equal(t, Model{DMABytesPerSec: 3.25e9, SpadReadLatency: 2 * time.Microsecond}, o.Model)
}

func TestOptionsFromEnvErrors(t *testing.T) {
	tests := []struct{ k, v string }{
		{"GOSHMEM_NTB_MODEL", "gen5"},
		{"GOSHMEM_NTB_DMA_MBPS", "fast"},
		{"GOSHMEM_NTB_DMA_SETUP", "-1us"},
		{"GOSHMEM_NTB_SPAD_READ", "soon"},
		{"GOSHMEM_NTB_WINDOWS", "1"},
		{"GOSHMEM_NTB_MW_SIZE", "5000"},
		{"GOSHMEM_NTB_DEAD_AFTER", "0s"},
		{"GOSHMEM_NTB_DEAD_AFTER", "1ns"},   // dead between two heartbeats
		{"GOSHMEM_NTB_DEAD_AFTER", "1000h"}, // never dead
		{"GOSHMEM_NTB_DMA_SETUP", "2s"},
		{"GOSHMEM_NTB_SPAD_READ", "1h"},
	}
	for _, tt := range tests {
		t.Run(tt.k+"="+tt.v, func(t *testing.T) {
			_, err := OptionsFromEnv(env(tt.k, tt.v), 2)
			require.ErrorIs(t, err, core.ErrInvalid)
			var ee *core.EnvError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tt.k, ee.Var)
			require.Equal(t, tt.v, ee.Value)
		})
	}
	_, err := OptionsFromEnv(env(), 1)
	require.ErrorIs(t, err, core.ErrInvalid, "a ring needs two hosts")
}

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("", 3)
	require.NoError(t, err)
	require.Empty(t, f)
	for _, bad := range []string{
		"link=3:down@1s",  // beyond the ring
		"host=-1:kill@1s", // negative
		"link=1:kill@1s",  // a link cannot be killed
		"host=1:down@1s",  // nor a host taken down
		"link=1:down",     // no time
		"link=1:down@-1s", // negative time
		"link=x:down@1s",
		"link1:down@1s",
		"down@1s",
	} {
		_, err := ParseFaults(bad, 3)
		var fe *FaultError
		require.ErrorAs(t, err, &fe, bad)
		require.ErrorIs(t, err, core.ErrInvalid)
		require.Contains(t, err.Error(), "link=K:down@T", "the error says what is allowed")
	}
	_, err = OptionsFromEnv(env("GOSHMEM_NTB_FAULT", "link=9:down@1s"), 3)
	require.ErrorContains(t, err, "GOSHMEM_NTB_FAULT")
	require.True(t, errors.Is(err, core.ErrInvalid))
}

func TestValidateOptions(t *testing.T) {
	o := DefaultOptions()
	o.Tag = "a/b"
	_, err := NewRing(t.TempDir(), 2, o)
	require.ErrorIs(t, err, core.ErrInvalid)
	_, err = Open(t.TempDir(), 2, 2, DefaultOptions())
	require.ErrorIs(t, err, core.ErrInvalid, "host 2 of 2")
}

func TestFaultInjectionByOptions(t *testing.T) {
	o := fastOptions()
	o.Faults = []Fault{{FaultLinkDown, 1, 0}, {FaultLinkUp, 1, 50 * time.Millisecond}, {FaultKill, 2, 100 * time.Millisecond}}
	r := newRing(t, 3, o)
	a, b := r.Hosts[1].Right, r.Hosts[2].Left
	// The link may already be down and up again: its downs are counted.
	require.Eventually(t, func() bool {
		s, err := Inspect(a.dir, "", 1, ntb.Right)
		return err == nil && s.Downs >= 1
	}, 10*time.Second, time.Millisecond)
	nextEvent(t, b, ntb.LinkEvent)
	// Host 2 is killed: host 0's Left port (link 2) and host 1's Right see it.
	require.Eventually(t, func() bool { return !r.Hosts[0].Left.LinkIsUp() && !a.LinkIsUp() }, 10*time.Second, time.Millisecond)
	require.Eventually(t, r.Hosts[0].Left.PeerDead, 10*time.Second, time.Millisecond)
	require.True(t, r.Hosts[0].Right.LinkIsUp(), "link 0 is untouched")
}

func TestReserveAccumulates(t *testing.T) {
	a, _ := pair(newRing(t, 2, fastOptions()))
	now := time.Now().UnixNano()
	first := a.reserve(now, 1e6, 1e9) // a millisecond of link time
	second := a.reserve(now, 1e6, 1e9)
	require.GreaterOrEqual(t, time.Duration(second-first), time.Millisecond, "the second booking queues behind the first")
	later := now + int64(time.Hour)
	require.Equal(t, later+int64(time.Millisecond), a.reserve(later, 1e6, 1e9), "a booking from a free link's later time starts then")
}
