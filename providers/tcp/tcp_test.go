package tcp

import (
	"errors"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
)

// A malformed setting is an error on every PE naming the variable and what
// it accepts, and no PE is left listening.
func TestBadParams(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    string
		invalid bool // the error wraps core.ErrInvalid
	}{
		{map[string]string{paramTimeout.Env: "soon"}, paramTimeout.Env, true},
		{map[string]string{paramTimeout.Env: "1ns"}, paramTimeout.Env + `="1ns" is malformed: allowed a duration from 100ms to 1h0m0s`, true},
		{map[string]string{paramConnect.Env: "1000h"}, paramConnect.Env + `="1000h" is malformed: allowed a duration from 100ms to 1h0m0s`, true},
		{map[string]string{paramBuffer.Env: "1"}, paramBuffer.Env, true},
		{map[string]string{paramFlushIdle.Env: "2s"}, paramFlushIdle.Env, true},
		{map[string]string{paramPoll.Env: "1h"}, paramPoll.Env, true},
		{map[string]string{paramPoll.Env: "-1us"}, paramPoll.Env, true},
		{map[string]string{paramPollStall.Env: "101"}, paramPollStall.Env + `="101" is malformed: allowed an integer from 0 to 100`, true},
		{map[string]string{paramPollStall.Env: "25%"}, paramPollStall.Env, true},
		{map[string]string{paramSocket.Env: "kernel"}, paramSocket.Env + `="kernel" is malformed: allowed "auto", "own" or "runtime"`, true},
		{map[string]string{paramIface.Env: "no-such-interface0"}, "no-such-interface0", true},
		{map[string]string{paramAddr.Env: "127.0.0.1", paramIface.Env: "lo"}, "set one", true},
		{map[string]string{paramAddr.Env: "256.0.0.1:0"}, "listen on 256.0.0.1:0", false},
	} {
		boots := bootstrap.NewLocal(2)
		errs := make([]error, 2)
		done := make(chan struct{})
		for rank := range 2 {
			go func() {
				defer func() { done <- struct{}{} }()
				cfg := &core.Config{Bootstrap: boots[rank], Log: slog.New(slog.DiscardHandler),
					Env: func(k string) (string, bool) {
						// Only PE 1 has the bad setting: PE 0 fails with it.
						if rank == 0 && k != paramAddr.Env {
							return "", false
						}
						v, ok := tc.env[k]
						return v, ok
					}}
				d, err := provider{}.Open(cfg)
				errs[rank] = err
				if err == nil {
					_ = d.Close()
				}
			}()
		}
		<-done
		<-done
		for rank, err := range errs {
			require.ErrorContains(t, err, tc.want, "PE %d", rank)
			if tc.invalid {
				require.ErrorIs(t, err, core.ErrInvalid, "PE %d with %v", rank, tc.env)
			}
		}
	}
}

// Puts wake a waiter watching the bytes they land on, and only those.
func TestLocalWaiter(t *testing.T) {
	doms, _ := openJob(t, 2, nil)
	regs := newRegions(t, doms, 4096)
	d, r := doms[0], regs[1] // PE 1 writes into PE 0's part of the region
	ep := newEndpoint(t, doms[1])

	seq, watch := d.WaitArm(regs[0], 0, 8)
	require.NoError(t, ep.Put(0, r, 100, []byte{1}))
	require.NoError(t, ep.Quiet()) // acknowledged: applied, and notify ran
	require.Equal(t, seq, d.WaitChange(seq, 0), "a put elsewhere woke the waiter")

	woke := make(chan uint32)
	go func() { woke <- d.WaitChange(seq, time.Minute) }()
	require.NoError(t, ep.Atomic(0, r, 0, core.AtomicAdd, core.Uint64, 1))
	require.NotEqual(t, seq, <-woke, "the atomic on the watched word did not wake the waiter")
	d.WaitDisarm(watch)

	// Without a range, any put wakes.
	seq, watch = d.WaitArm(nil, 0, 0)
	require.NoError(t, ep.PutValue(0, r, 200, 7, 4))
	require.NoError(t, ep.Quiet())
	require.NotEqual(t, seq, d.WaitChange(seq, 0))
	d.WaitDisarm(watch)
}

// With FLUSH_IDLE the writer waits for more before writing; everything
// still arrives in order.
func TestFlushIdle(t *testing.T) {
	doms, _ := openJob(t, 2, map[string]string{paramFlushIdle.Env: "200us"})
	regs := newRegions(t, doms, 1<<16)
	ep := newEndpoint(t, doms[0])
	for i := range 1000 {
		require.NoError(t, ep.PutValue(1, regs[0], (i%64)*8, uint64(i), 8))
	}
	require.NoError(t, ep.Quiet())
	last := make([]uint64, 64)
	for i := range 1000 {
		last[i%64] = uint64(i)
	}
	for w := range 64 {
		v, err := ep.GetValue(1, regs[0], w*8, 8)
		require.NoError(t, err)
		require.Equal(t, last[w], v, "the last put to word %d", w)
	}
}

// Close ends every connection cleanly, each PE's BYE answered by the
// other's; after it operations fail with ErrClosed and the memory is gone.
func TestClose(t *testing.T) {
	doms, _ := openJob(t, 3, map[string]string{paramTimeout.Env: "1m"})
	regs := newRegions(t, doms, 4096)
	ep := newEndpoint(t, doms[0])
	closeAll(t, doms)
	for _, d := range doms {
		for peer, c := range d.conns {
			if c != nil {
				require.Equal(t, "it closed its connection", c.failed.Load().Reason, "PE %d's connection to PE %d", d.rank, peer)
			}
		}
	}
	err := ep.Put(1, regs[0], 0, []byte{1})
	require.True(t, errors.Is(err, core.ErrClosed), "%v", err)
	require.Nil(t, regs[0].Local())
	require.NoError(t, doms[0].Close(), "Close is idempotent")
}

// GOSHMEM_TCP_SOCKET=auto takes sockets out of the runtime's poller only
// where readers poll (the PEs sharing the CPUs fit them and POLL is not 0)
// and the callers are not a C program's, locked to their threads.
func TestSocketAuto(t *testing.T) {
	for _, tc := range []struct {
		env         map[string]string
		sharing     int
		wantOwnSock bool
	}{
		{map[string]string{}, 2, true},
		{map[string]string{}, 3, false},
		{map[string]string{paramPoll.Env: "0"}, 2, false},
		{map[string]string{paramSocket.Env: socketOwn}, 3, true},
		{map[string]string{paramSocket.Env: socketRuntime}, 1, false},
		{map[string]string{"locked": "1"}, 2, false},
		{map[string]string{"locked": "1", paramSocket.Env: socketOwn}, 2, true},
	} {
		env := map[string]string{core.EnvCPUs: "2"}
		maps.Copy(env, tc.env)
		cfg := &core.Config{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
			LockedCallers: env["locked"] == "1"}
		s, err := readSettings(cfg, 1, 4)
		require.NoError(t, err)
		s.chooseSocket(tc.sharing, cfg.LockedCallers)
		require.Equal(t, tc.wantOwnSock, s.ownSocket, "%v with %d PEs on 2 CPUs", tc.env, tc.sharing)
	}
}

// The PEs that share this PE's CPUs are those that advertised the same
// addresses, whatever their ports and order: one machine's PEs listening
// on every interface, or all on the loopback address, count together;
// namespaced hosts, each with addresses of its own, apart.
func TestSharingCPUs(t *testing.T) {
	oneMachine := [][]string{
		{"10.0.0.1:4001", "127.0.0.1:4001"},
		{"127.0.0.1:4002", "10.0.0.1:4002"},
		{"10.0.0.1:4003", "127.0.0.1:4003"},
	}
	require.Equal(t, 3, sharingCPUs(oneMachine, 1))
	loopback := [][]string{{"127.0.0.1:1"}, {"127.0.0.1:2"}}
	require.Equal(t, 2, sharingCPUs(loopback, 0))
	namespaced := [][]string{
		{"10.9.0.1:1", "127.0.0.1:1"}, {"10.9.0.1:2", "127.0.0.1:2"},
		{"10.9.0.2:3", "127.0.0.1:3"}, {"10.9.0.2:4", "127.0.0.1:4"},
		{"10.9.0.3:5", "127.0.0.1:5"},
	}
	require.Equal(t, 2, sharingCPUs(namespaced, 0))
	require.Equal(t, 2, sharingCPUs(namespaced, 3))
	require.Equal(t, 1, sharingCPUs(namespaced, 4))
}
