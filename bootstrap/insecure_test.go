package bootstrap

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

func captureWarnings(t *testing.T) *lockedBuf {
	buf := &lockedBuf{}
	old := insecureWarning
	insecureWarning = buf
	t.Cleanup(func() { insecureWarning = old })
	return buf
}

// srunEnv is what srun without PMI gives PE r of a job of n, with
// GOSHMEM_BOOTSTRAP set as the README says, and extra.
func srunEnv(r, n int, addr string, extra ...string) func(string) (string, bool) {
	return envMap(append([]string{EnvSlurmRank, strconv.Itoa(r), EnvSlurmSize, strconv.Itoa(n),
		EnvSlurmJobID, "77", EnvBootstrap, addr, EnvJoinTimeout, "2s"}, extra...)...)
}

// stranger dials the store as rank of a job of size with the empty key,
// the proof anyone can compute, and reports whether it got in.
func stranger(addr string, rank, size int) (joined bool, err error) {
	c, err := dial(addr, rank, size, nil, 2*time.Second, 0)
	if err != nil {
		return false, err
	}
	c.Close()
	return true, nil
}

// Under srun without PMI and without a secret, a stranger who reaches PE
// 0's port could take a rank with the empty-key proof before the real PE
// came. The job is refused instead, naming the ways to give it a secret
// and the opt-out; no store is served.
func TestStrangerWithoutSecretRefused(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", freePort(t))
	job0, _, err := JobFromEnv(srunEnv(0, 2, addr))
	if err == nil {
		// The store PE 0 serves takes anyone: show it.
		captureWarnings(t)
		done := make(chan error, 1)
		var b0 core.Bootstrap
		go func() {
			var err error
			b0, err = Connect(job0, 2*time.Second)
			done <- err
		}()
		joined, serr := stranger(addr, 1, 2)
		if cerr := <-done; cerr == nil {
			b0.Close()
		}
		require.False(t, joined, "a stranger joined PE 0's store as PE 1 with the empty key (dial: %v)", serr)
	}
	require.Error(t, err)
	require.ErrorIs(t, err, core.ErrInvalid)
	var ee *core.EnvError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, EnvSecret, ee.Var)
	for _, want := range []string{EnvSecret, EnvSecretFile, EnvInsecure + "=1", "srun", addr} {
		require.Contains(t, err.Error(), want)
	}
	// Nothing listens: PE 0 never served.
	joined, _ := stranger(addr, 1, 2)
	require.False(t, joined)
}

// Every launcher without PMI is refused the same way, PE 0 or not; a
// single PE with no store needs no secret.
func TestNoSecretRefusedEveryLauncher(t *testing.T) {
	for _, env := range [][]string{
		{EnvSlurmRank, "1", EnvSlurmSize, "2", EnvBootstrap, "h:1"},
		{EnvOMPIRank, "0", EnvOMPISize, "2", EnvBootstrap, "h:1"},
		{EnvPMIRank, "3", EnvPMISize, "4", EnvBootstrap, "h:1"},
		{EnvSlurmRank, "0", EnvSlurmSize, "1", EnvBootstrap, "h:1"},
		{EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1", EnvInsecure, "0"},
	} {
		_, _, err := JobFromEnv(envMap(env...))
		var ee *core.EnvError
		require.True(t, errors.As(err, &ee), "%v: %v", env, err)
		require.Equal(t, EnvSecret, ee.Var, "%v", env)
		require.Contains(t, err.Error(), EnvInsecure+"=1")
	}
	job, _, err := JobFromEnv(envMap(EnvSlurmRank, "0", EnvSlurmSize, "1"))
	require.NoError(t, err)
	require.False(t, job.Insecure)

	_, _, err = JobFromEnv(envMap(EnvSlurmRank, "0", EnvSlurmSize, "2", EnvBootstrap, "h:1", EnvInsecure, "maybe"))
	var ee *core.EnvError
	require.True(t, errors.As(err, &ee), "%v", err)
	require.Equal(t, EnvInsecure, ee.Var)
	require.Equal(t, "maybe", ee.Value)
}

// With a secret in the environment the stranger's empty-key proof is
// refused and the real PE joins.
func TestStrangerRefusedWithSecret(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", freePort(t))
	warn := captureWarnings(t)
	job0, _, err := JobFromEnv(srunEnv(0, 2, addr, EnvSecret, hexSecret))
	require.NoError(t, err)
	job1, _, err := JobFromEnv(srunEnv(1, 2, addr, EnvSecret, hexSecret))
	require.NoError(t, err)
	require.False(t, job0.Insecure)
	var b0 core.Bootstrap
	done := make(chan error, 1)
	go func() {
		var err error
		b0, err = Connect(job0, watchdog)
		done <- err
	}()
	joined, err := stranger(addr, 1, 2)
	require.False(t, joined)
	require.Error(t, err)
	b1, err := Connect(job1, watchdog)
	require.NoError(t, err)
	require.NoError(t, <-done)
	gathered := make(chan error, 1)
	go func() { _, err := b0.Allgather([]byte("0")); gathered <- err }()
	all, err := b1.Allgather([]byte("1"))
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.NoError(t, <-gathered)
	closed := make(chan error, 1)
	go func() { closed <- b0.Close() }()
	require.NoError(t, b1.Close())
	require.NoError(t, <-closed)
	require.Empty(t, warn.String())
}

// GOSHMEM_INSECURE=1 runs the job unauthenticated, and PE 0 alone warns,
// once, on standard error.
func TestInsecureOptOutWarnsOnce(t *testing.T) {
	const n = 3
	addr := net.JoinHostPort("127.0.0.1", freePort(t))
	warn := captureWarnings(t)
	bs := make([]core.Bootstrap, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			job, _, err := JobFromEnv(srunEnv(r, n, addr, EnvInsecure, "1"))
			if err != nil {
				errs[r] = err
				return
			}
			if !job.Insecure || job.Secret != nil {
				errs[r] = errors.New("the opt-out is not recorded in the job")
				return
			}
			if bs[r], errs[r] = Connect(job, watchdog); errs[r] != nil {
				return
			}
			_, errs[r] = bs[r].Allgather(nil)
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "PE %d", r)
	}
	closed := make(chan error, 1)
	go func() { closed <- bs[0].Close() }()
	for _, b := range bs[1:] {
		require.NoError(t, b.Close())
	}
	require.NoError(t, <-closed)
	w := warn.String()
	require.Equal(t, 1, strings.Count(w, "WARNING"), "%q", w)
	for _, want := range []string{EnvInsecure + "=1", "unauthenticated", addr, EnvSecret} {
		require.Contains(t, w, want)
	}
}
