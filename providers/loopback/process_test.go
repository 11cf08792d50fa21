package loopback

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// The variables that make the test binary a PE of TestMultiProcess.
const (
	envTestPE   = "GOSHMEM_LOOPBACK_TEST_PE"
	envTestNPEs = "GOSHMEM_LOOPBACK_TEST_NPES"
	envTestRdv  = "GOSHMEM_LOOPBACK_TEST_RDV"
	envTestJob  = "GOSHMEM_LOOPBACK_TEST_JOB"
)

// fileBoot is a test-only bootstrap for PEs in separate processes: round k
// of Allgather is one file per PE in a shared directory, written under a
// temporary name and renamed, so readers see all of it or nothing.
type fileBoot struct {
	dir        string
	rank, size int
	round      int
}

func (b *fileBoot) Rank() int    { return b.rank }
func (b *fileBoot) Size() int    { return b.size }
func (b *fileBoot) Err() error   { return nil }
func (b *fileBoot) Close() error { return nil }
func (b *fileBoot) Barrier() error {
	_, err := b.Allgather(nil)
	return err
}

func (b *fileBoot) name(round, pe int) string {
	return filepath.Join(b.dir, fmt.Sprintf("round%d-pe%d", round, pe))
}

func (b *fileBoot) Allgather(data []byte) ([][]byte, error) {
	k := b.round
	b.round++
	own := b.name(k, b.rank)
	if err := os.WriteFile(own+".tmp", data, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(own+".tmp", own); err != nil {
		return nil, err
	}
	out := make([][]byte, b.size)
	deadline := time.Now().Add(time.Minute)
	var pause core.Backoff
	for pe := range out {
		for {
			d, err := os.ReadFile(b.name(k, pe))
			if err == nil {
				out[pe] = d
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			if time.Now().After(deadline) {
				return nil, &core.PeerLostError{PE: pe, Reason: "no contribution to the allgather within a minute"}
			}
			pause.Pause()
		}
	}
	// Every PE wrote round k, so every PE is done reading round k-1.
	if k > 0 {
		if err := os.Remove(b.name(k-1, b.rank)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var _ core.Bootstrap = (*fileBoot)(nil)

// TestMultiProcess runs the provider with PEs that really are processes:
// the test binary re-executes itself once per PE.
func TestMultiProcess(t *testing.T) {
	if os.Getenv(envTestPE) != "" {
		processPE(t)
		return
	}
	t.Parallel()
	for _, n := range []int{2, 4} {
		t.Run("np="+strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			runProcesses(t, n)
		})
	}
}

func runProcesses(t *testing.T, n int) {
	base := t.TempDir()
	rdv, shm := filepath.Join(base, "rdv"), filepath.Join(base, "shm")
	require.NoError(t, os.Mkdir(rdv, 0o700))
	require.NoError(t, os.Mkdir(shm, 0o700))
	job := randomID()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for pe := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMultiProcess$", "-test.count=1", "-test.v",
			"-test.timeout=2m")
		cmd.Env = append(os.Environ(),
			envTestPE+"="+strconv.Itoa(pe), envTestNPEs+"="+strconv.Itoa(n), envTestRdv+"="+rdv,
			envTestJob+"="+job, core.EnvShmDir+"="+shm)
		cmd.Stdout, cmd.Stderr = &outs[pe], &outs[pe]
		require.NoError(t, cmd.Start())
		wg.Go(func() {
			errs[pe] = cmd.Wait()
			if errs[pe] != nil {
				cancel() // the others would wait for this PE in vain
			}
		})
	}
	wg.Wait()
	for pe := range n {
		require.NoError(t, errs[pe], "PE %d:\n%s", pe, outs[pe].String())
		require.Contains(t, outs[pe].String(), "--- PASS: TestMultiProcess", "PE %d ran the test", pe)
	}
	require.Empty(t, dirEntries(t, filepath.Join(shm, "goshmem-"+job)))
}

// processPE is one PE process of TestMultiProcess.
func processPE(t *testing.T) {
	rank, err := strconv.Atoi(os.Getenv(envTestPE))
	require.NoError(t, err)
	n, err := strconv.Atoi(os.Getenv(envTestNPEs))
	require.NoError(t, err)
	boot := &fileBoot{dir: os.Getenv(envTestRdv), rank: rank, size: n}
	cfg := &core.Config{Bootstrap: boot, JobID: os.Getenv(envTestJob)}
	prov, err := core.Lookup(Name)
	require.NoError(t, err)

	dd, err := prov.Open(cfg)
	require.NoError(t, err)
	d := dd.(*domain)
	const size, m = 1 << 16, 1000
	r, err := d.NewRegion(size)
	require.NoError(t, err)
	require.Empty(t, dirEntries(t, cfg.JobDir()), "files left after NewRegion")
	ep, err := d.NewEndpoint(core.EndpointOptions{})
	require.NoError(t, err)

	const counterOff, flagOff, slotsOff = 0, 64, 128
	armed, watch := d.WaitArm(r, flagOff, 8)
	require.NoError(t, boot.Barrier())

	// Half the adds through the endpoint, half through PeerBytes and the
	// process's own sync/atomic: all are atomic with each other.
	peer0 := mem.Word64(d.PeerBytes(0, r), counterOff)
	for i := range m {
		if i%2 == 0 {
			require.NoError(t, ep.Atomic(0, r, counterOff, core.AtomicAdd, core.Uint64, 1))
		} else {
			atomic.AddUint64(peer0, 1)
		}
	}
	for pe := range n {
		require.NoError(t, ep.Put(pe, r, slotsOff+rank*256, pattern(rank, 256)))
	}
	require.NoError(t, ep.Quiet())

	// PE 0 sleeps until the last PE's put wakes it, across processes.
	switch rank {
	case 0:
		for seq := armed; atomic.LoadUint64(mem.Word64(r.Local(), flagOff)) == 0; {
			seq = d.WaitChange(seq, time.Minute)
		}
	case n - 1:
		waitFor(func() bool { return atomic.LoadUint32(d.ctl[0].sleepers) != 0 })
		require.NoError(t, ep.PutValue(0, r, flagOff, 1, 8))
	}
	d.WaitDisarm(watch)
	if rank == 0 {
		require.NotEqual(t, armed, atomic.LoadUint32(d.self.seq))
	}
	require.NoError(t, boot.Barrier())

	if rank == 0 {
		require.Equal(t, uint64(n*m), atomic.LoadUint64(mem.Word64(r.Local(), counterOff)))
	}
	for pe := range n {
		got := make([]byte, 256)
		require.NoError(t, ep.Get(pe, r, slotsOff+rank*256, got))
		require.Equal(t, pattern(rank, 256), got, "my slot on PE %d", pe)
		require.Equal(t, pattern(pe, 256), r.Local()[slotsOff+pe*256:][:256], "PE %d's slot here", pe)
	}
	require.NoError(t, d.Close())
}
