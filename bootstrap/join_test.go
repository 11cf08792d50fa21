package bootstrap

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func joinJob(t *testing.T, kv ...string) Job {
	job, launched, err := JobFromEnv(envMap(kv...))
	require.NoError(t, err)
	require.True(t, launched)
	return job
}

// PE 0 whose peer never comes gives up after GOSHMEM_JOIN_TIMEOUT, naming
// the PE and the address it was told.
func TestJoinTimeoutPE0Alone(t *testing.T) {
	addr := freeAddr(t)
	job := joinJob(t, EnvPMIRank, "0", EnvPMISize, "2", EnvBootstrap, addr, EnvSecret, hexSecret, EnvJoinTimeout, "1s")
	require.Equal(t, time.Second, job.JoinTimeout)
	start := time.Now()
	b, err := Connect(job, time.Hour)
	require.Nil(t, b)
	require.ErrorIs(t, err, core.ErrTimeout)
	require.Contains(t, err.Error(), "PE 1 never joined")
	require.Contains(t, err.Error(), addr)
	require.Contains(t, err.Error(), EnvBootstrap)
	require.Less(t, time.Since(start), 30*time.Second)
}

// A PE whose PE 0 never serves the store gives up, naming the address.
func TestJoinTimeoutNoStore(t *testing.T) {
	addr := freeAddr(t)
	job := joinJob(t, EnvPMIRank, "1", EnvPMISize, "2", EnvBootstrap, addr, EnvSecret, hexSecret, EnvJoinTimeout, "1s")
	start := time.Now()
	b, err := Connect(job, time.Hour)
	require.Nil(t, b)
	require.ErrorIs(t, err, core.ErrTimeout)
	require.Contains(t, err.Error(), "PE 1 gives up")
	require.Contains(t, err.Error(), addr)
	require.Less(t, time.Since(start), 30*time.Second)
}

// The PEs that did join hear which one never came.
func TestJoinTimeoutOthersHear(t *testing.T) {
	addr := freeAddr(t)
	env := func(rank string) []string {
		return []string{EnvSlurmRank, rank, EnvSlurmSize, "3", EnvBootstrap, addr, EnvSecret, hexSecret, EnvJoinTimeout, "1s"}
	}
	var wg sync.WaitGroup
	var err0 error
	wg.Add(1)
	go func() {
		defer wg.Done()
		b, err := Connect(joinJob(t, env("0")...), 0)
		if b != nil {
			b.Close()
		}
		err0 = err
	}()
	b1, err := Connect(joinJob(t, env("1")...), 0)
	require.NoError(t, err)
	err = b1.Barrier()
	wg.Wait()
	require.Error(t, err0)
	require.Contains(t, err0.Error(), "PE 2 never joined")
	require.Error(t, err)
	var lost *core.PeerLostError
	require.True(t, errors.As(err, &lost), "%v", err)
	require.Equal(t, 2, lost.PE, "%v", err)
	require.Contains(t, err.Error(), addr)
	b1.Close()
}

func TestDeadAfterInvalid(t *testing.T) {
	for _, v := range []string{"1ns", "1s", "2h", "never"} {
		_, _, err := JobFromEnv(envMap(EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1", EnvSecret, hexSecret, EnvDeadAfter, v))
		var ee *core.EnvError
		require.True(t, errors.As(err, &ee), "%v", err)
		require.Equal(t, EnvDeadAfter, ee.Var)
		require.Equal(t, v, ee.Value)
		require.Contains(t, err.Error(), "2s", "%v", err)
	}
	job, _, err := JobFromEnv(envMap(EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1", EnvSecret, hexSecret, EnvDeadAfter, "3s"))
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, job.DeadAfter)
}

func TestJoinTimeoutInvalid(t *testing.T) {
	for _, v := range []string{"5ms", "2h", "soon"} {
		_, _, err := JobFromEnv(envMap(EnvPMIRank, "0", EnvPMISize, "2", EnvBootstrap, "h:1", EnvJoinTimeout, v))
		var ee *core.EnvError
		require.True(t, errors.As(err, &ee), "%v", err)
		require.Equal(t, EnvJoinTimeout, ee.Var)
		require.Equal(t, v, ee.Value)
		require.True(t, strings.Contains(err.Error(), "1s"), "%v", err)
	}
}

func TestPEsList(t *testing.T) {
	require.Equal(t, "PE 3", pesList([]int{3}))
	require.Equal(t, "PEs 1, 2", pesList([]int{1, 2}))
	many := make([]int, 20)
	require.True(t, strings.HasSuffix(pesList(many), "and 4 more"))
}
