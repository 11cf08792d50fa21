package tcp

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// headFirst places a locked caller's large put so that the bulk's source
// lies in its page where its copy lands after a header at a page's start;
// Go programs' puts and small ones go as they are.
func TestHeadFirst(t *testing.T) {
	buf := make([]byte, 2*largePut+8192)
	base := int((4096 - mem.Addr(buf)&4095) & 4095) // buf[base:] starts a page
	locked := &domain{lockedCallers: true}
	for _, at := range []int{0, 8, 16, 24, 100, 4095} {
		src := buf[base+at : base+at+largePut]
		h := locked.headFirst(src)
		require.Less(t, h, 4096)
		require.Equal(t, uintptr(hdrLen)&4095, mem.Addr(src[h:])&4095, "source %d bytes into its page", at)
		require.Zero(t, (&domain{}).headFirst(src), "a Go program's put goes as it is")
	}
	require.Zero(t, locked.headFirst(buf[base+16:base+16+largePut-1]), "a small put goes as it is")
	require.Zero(t, locked.headFirst(buf[base+hdrLen:base+hdrLen+largePut]), "a put already so placed")
}

// A locked caller's large puts from sources at any place in a page, to any
// offset, land whole, blocking and not, each flagged for its quiet's wait
// for the acknowledgement (ackwait.go).
func TestLockedCallersPlacedPuts(t *testing.T) {
	const size = largePut + 5000
	doms, _ := openJobWith(t, 2, nil, func(cfg *core.Config) { cfg.LockedCallers = true })
	regs := newRegions(t, doms, 2*size+4096)
	ep := newEndpoint(t, doms[0])
	buf := make([]byte, size+8192)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	base := int((4096 - mem.Addr(buf)&4095) & 4095)
	c := doms[0].conns[1]
	require.NotNil(t, c.aw.pollIn, "a locked domain's connection waits for acknowledgements in poll(2)")
	for n, at := range []int{0, 16, 24, 1000, 4095} {
		for _, off := range []int{0, 8, 4093} {
			src := buf[base+at : base+at+size]
			clear(regs[1].mem)
			var err error
			if n%2 == 0 {
				err = ep.Put(1, regs[0], off, src)
			} else {
				err = ep.PutNBI(1, regs[0], off, src)
			}
			require.NoError(t, err)
			require.True(t, c.aw.large.Load(), "the put is flagged for the quiet")
			require.NoError(t, ep.Quiet())
			require.Equal(t, src, regs[1].mem[off:off+size], "source %d into its page, to offset %d", at, off)
			require.Zero(t, regs[1].mem[off+size], "nothing past the put")
			if off > 0 {
				require.Zero(t, regs[1].mem[off-1], "nothing before the put")
			}
		}
	}
}

// A Go program's connections have no such wait.
func TestUnlockedNoAckWait(t *testing.T) {
	doms, _ := openJob(t, 2, nil)
	require.Nil(t, doms[0].conns[1].aw.pollIn)
}

// A locked caller's quiet waiting in poll(2) for a large put's
// acknowledgement that never comes ends with the peer's loss, with the
// peer-lost error.
func TestLockedQuietPeerLost(t *testing.T) {
	doms, _ := openJobWith(t, 2, nil, func(cfg *core.Config) { cfg.LockedCallers = true })
	regs := newRegions(t, doms, largePut)
	ep := newEndpoint(t, doms[0])
	c := doms[0].conns[1]

	// PE 1 reads the put but cannot queue its acknowledgement.
	stalled := doms[1].conns[0]
	stalled.q.mu.Lock()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := ep.Put(1, regs[0], 0, make([]byte, largePut))
		if err == nil {
			err = ep.Quiet()
		}
		done <- err
	}()
	// Both frames issued means the bulk was written and flagged; the flag
	// gone, the quiet has taken it to wait.
	if !assert.Eventually(t, func() bool { return ep.Counter().Issued() >= 2 && !c.aw.large.Load() }, 10*time.Second, time.Millisecond,
		"the put is written and its quiet waits") {
		stalled.q.mu.Unlock()
		t.FailNow()
	}
	die(doms[1])
	stalled.q.mu.Unlock()
	select {
	case err := <-done:
		require.ErrorIs(t, err, core.ErrPeerLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the quiet did not end with its peer")
	}
}
