package emu

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ntb"
)

// envChildDir makes the test binary host 1 of TestMultiProcess's ring;
// envChildIdle makes it a host that only waits for its injected death.
const (
	envChildDir  = "GOSHMEM_NTB_TEST_CHILD_DIR"
	envChildIdle = "GOSHMEM_NTB_TEST_CHILD_IDLE"
)

// The doorbell bits of the exchange.
const (
	bitReady  = 1 << 1 // child to parent: window set, scratchpad written
	bitCopied = 1 << 2 // parent to child: DMA done
	bitSeen   = 1 << 3 // child to parent: data verified
	bitBye    = 1 << 4 // parent to child: result read, die now
	bitHello  = 1 << 0 // child to parent across the other link
)

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	return b
}

// TestMultiProcess runs a ring of two hosts that are processes: the test
// binary re-executes itself as host 1, which ends by killing itself.
func TestMultiProcess(t *testing.T) {
	if dir := os.Getenv(envChildDir); dir != "" {
		childHost(t, dir)
		return
	}
	dir := t.TempDir()
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChildDir+"="+dir, "GOSHMEM_NTB_MODEL=off", "GOSHMEM_NTB_MW_SIZE=16M")
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	defer func() {
		if t.Failed() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Logf("host 1 said:\n%s", out.String())
		}
	}()

	h, err := Open(dir, 0, 2, fastOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	right, left := h.Right, h.Left
	require.NoError(t, right.LinkEnable())
	require.NoError(t, left.LinkEnable())
	require.NoError(t, right.WaitLink(time.Minute))
	require.NoError(t, left.WaitLink(time.Minute))

	require.Equal(t, uint64(bitHello), nextEvent(t, left, ntb.DoorbellEvent).DB)
	require.Equal(t, uint64(bitReady), nextEvent(t, right, ntb.DoorbellEvent).DB)
	v, err := right.PeerSpadRead(0)
	require.NoError(t, err)
	require.Equal(t, uint32(0xC0FFEE), v)
	mw, err := right.PeerMW(0)
	require.NoError(t, err)
	require.Len(t, mw, 1<<20)
	ch, err := right.DMA(1)
	require.NoError(t, err)
	require.NoError(t, ch.Submit(mw, pattern(1<<20), nil))
	require.NoError(t, ch.Wait())
	require.NoError(t, right.PeerDBSet(bitCopied))
	require.Equal(t, uint64(bitSeen), nextEvent(t, right, ntb.DoorbellEvent).DB)
	v, err = right.PeerSpadRead(1)
	require.NoError(t, err)
	require.Equal(t, uint32(1), v, "host 1 found the DMA'd data intact")

	// Host 1 now kills itself: both links go down within a bounded time.
	require.NoError(t, right.PeerDBSet(bitBye))
	start := time.Now()
	nextEvent(t, right, ntb.LinkEvent)
	require.False(t, right.LinkIsUp())
	require.Eventually(t, func() bool { return !left.LinkIsUp() }, 10*time.Second, time.Millisecond)
	t.Logf("dead host seen after %v", time.Since(start))
	v, err = right.PeerSpadRead(1)
	require.ErrorIs(t, err, ntb.ErrLinkDown)
	require.Equal(t, uint32(math.MaxUint32), v)
	require.Error(t, cmd.Wait(), "host 1 was killed")
}

func childHost(t *testing.T, dir string) {
	opts, err := OptionsFromEnv(nil, 2)
	require.NoError(t, err)
	require.True(t, opts.Model.Off())
	h, err := Open(dir, 1, 2, opts)
	require.NoError(t, err)
	left, right := h.Left, h.Right
	require.NoError(t, left.LinkEnable())
	require.NoError(t, right.LinkEnable())
	require.NoError(t, left.WaitLink(time.Minute))
	require.NoError(t, right.WaitLink(time.Minute))
	if os.Getenv(envChildIdle) != "" {
		time.Sleep(time.Minute) // GOSHMEM_NTB_FAULT kills the process long before
		t.Fatal("the injected kill did not happen")
	}

	require.NoError(t, right.PeerDBSet(bitHello))
	buf, err := left.MWSetTrans(0, 1<<20)
	require.NoError(t, err)
	require.NoError(t, left.SpadWrite(0, 0xC0FFEE))
	require.NoError(t, left.PeerDBSet(bitReady))
	require.Equal(t, uint64(bitCopied), nextEvent(t, left, ntb.DoorbellEvent).DB)
	ok := uint32(0)
	if bytes.Equal(buf, pattern(1<<20)) {
		ok = 1
	}
	require.NoError(t, left.SpadWrite(1, ok))
	require.NoError(t, left.PeerDBSet(bitSeen))
	require.Equal(t, uint64(bitBye), nextEvent(t, left, ntb.DoorbellEvent).DB)
	h.Inject(FaultKill)
}

// TestInjectedKillAcrossProcesses: GOSHMEM_NTB_FAULT kills host 1's
// process at the chosen moment, and host 0 sees both links go down.
func TestInjectedKillAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChildDir+"="+dir, envChildIdle+"=1", "GOSHMEM_NTB_MODEL=off",
		"GOSHMEM_NTB_MW_SIZE=16M", "GOSHMEM_NTB_FAULT=host=1:kill@300ms")
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Logf("host 1 said:\n%s", out.String())
		}
	}()

	h, err := Open(dir, 0, 2, fastOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	require.NoError(t, h.Right.LinkEnable())
	require.NoError(t, h.Left.LinkEnable())
	require.NoError(t, h.Right.WaitLink(time.Minute))
	require.NoError(t, h.Left.WaitLink(time.Minute))
	require.Eventually(t, func() bool { return h.Left.PeerDead() && h.Right.PeerDead() }, time.Minute, time.Millisecond)
	require.False(t, h.Right.LinkIsUp())
	err = cmd.Wait()
	waited = true
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "signal: killed", ee.Error(), "host 1 said:\n%s", out.String())
	require.NotContains(t, out.String(), "FAIL")
}
