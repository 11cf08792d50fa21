package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb/emu"
)

// TestMain lets perf -procs start this test binary as its host 1.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == perfPeerCmd {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frob"},
		{"info"},
		{"info", "-job", "x"},
		{"info", "-job", "x", "-host", "0", "-side", "up"},
		{"info", "-job", "x", "-host", "0", "extra"},
		{"perf", "-sizes", "1K,lots"},
		{"perf", "-n", "0"},
		{"perf", "-bogus"},
	} {
		code, _, stderr := runCmd(args...)
		require.Equal(t, 2, code, "%q", args)
		require.NotEmpty(t, stderr, "%q", args)
	}
	code, stdout, _ := runCmd("help")
	require.Zero(t, code)
	require.Contains(t, stdout, "ntbtool info")
}

func TestInfo(t *testing.T) {
	dir := t.TempDir()
	o := emu.DefaultOptions()
	o.Model = emu.Model{}
	o.MWMax = 1 << 20
	r, err := emu.NewRing(dir, 3, o)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.EnableAll(time.Minute))
	require.NoError(t, r.Hosts[0].Left.SpadWrite(6, 0xabcd))
	require.NoError(t, r.Hosts[2].Right.PeerDBSet(0x10))
	_, err = r.Hosts[0].Left.MWSetTrans(1, 64<<10)
	require.NoError(t, err)

	code, stdout, stderr := runCmd("info", "-job", dir, "-host", "0", "-side", "left")
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "host 0 left port: link 2 of a ring of 3 hosts, up")
	require.Contains(t, stdout, "0x0000abcd")
	require.Contains(t, stdout, "0x0010")
	require.Contains(t, stdout, "64K (translation 1)")

	code, stdout, stderr = runCmd("info", "-job", dir, "-host", "2", "-json")
	require.Zero(t, code, stderr)
	var s emu.Snapshot
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	require.Equal(t, 2, s.Link)
	require.True(t, s.Up)
	require.Equal(t, uint64(1), s.Own.Stats.DoorbellsSent)
	require.Contains(t, stdout, `"Side": "right"`)

	code, _, stderr = runCmd("info", "-job", dir, "-host", "5")
	require.Equal(t, 1, code)
	require.NotEmpty(t, stderr)

	// A tagged ring is found without -tag while it is the only one.
	o.Tag = "d42"
	tagged := t.TempDir()
	r2, err := emu.NewRing(tagged, 2, o)
	require.NoError(t, err)
	defer func() { require.NoError(t, r2.Close()) }()
	code, stdout, stderr = runCmd("info", "-job", tagged, "-host", "1", "-side", "left")
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "host 1 left port: link 0 of a ring of 2 hosts, down")
	r3, err := emu.NewRing(tagged, 2, emu.Options{Model: o.Model, Windows: 2, MWMax: o.MWMax, DeadAfter: time.Second,
		Poll: time.Millisecond, AttachTimeout: time.Second})
	require.NoError(t, err)
	defer func() { require.NoError(t, r3.Close()) }()
	code, _, stderr = runCmd("info", "-job", tagged, "-host", "1")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "-tag")
	code, _, stderr = runCmd("info", "-job", t.TempDir(), "-host", "1")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no ring")
}

func TestPerf(t *testing.T) {
	for _, model := range []string{"off", "gen3x8"} {
		code, stdout, stderr := runCmd("perf", "-model", model, "-sizes", "1K,64K", "-time", "5ms", "-n", "20")
		require.Zero(t, code, stderr)
		require.Contains(t, stdout, "doorbell round trip")
		require.Contains(t, stdout, "64K")
	}
	code, stdout, stderr := runCmd("perf", "-model", "off", "-sizes", "4K", "-time", "5ms", "-n", "10", "-json")
	require.Zero(t, code, stderr)
	var r perfResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Equal(t, "off", r.Model)
	require.Len(t, r.Throughput, 1)
	require.Equal(t, int64(4096), r.Throughput[0].Size)
	require.Positive(t, r.Throughput[0].DMAMBps)
	require.Len(t, r.Latency, 3)
	require.True(t, strings.HasPrefix(r.Latency[0].Op, "doorbell"))

	code, stdout, stderr = runCmd("perf", "-procs", "-model", "off", "-sizes", "8K", "-time", "5ms", "-n", "10", "-json")
	require.Zero(t, code, stderr)
	r = perfResult{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Equal(t, "processes", r.Hosts)
	require.Positive(t, r.Throughput[0].DMAIters)
	require.Positive(t, r.Latency[0].AvgNs)

	code, _, stderr = runCmd("perf", "-model", "gen9")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "GOSHMEM_NTB_MODEL")
}
