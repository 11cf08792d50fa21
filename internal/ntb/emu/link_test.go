package emu

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/ntb"
)

func TestLinkDownVisibleAndResetsTranslations(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	_, err := b.MWSetTrans(0, 4096)
	require.NoError(t, err)
	_, err = a.PeerMW(0)
	require.NoError(t, err)
	require.NoError(t, b.SpadWrite(2, 77))

	require.NoError(t, a.SetLinkDown(true))
	nextEvent(t, b, ntb.LinkEvent)
	nextEvent(t, a, ntb.LinkEvent)
	require.False(t, a.LinkIsUp())
	require.False(t, b.LinkIsUp())
	v, err := a.PeerSpadRead(2)
	require.ErrorIs(t, err, ntb.ErrLinkDown)
	require.Equal(t, uint32(math.MaxUint32), v)
	require.ErrorIs(t, a.PeerSpadWrite(2, 1), ntb.ErrLinkDown)
	require.ErrorIs(t, a.PeerDBSet(1), ntb.ErrLinkDown)
	_, err = a.PeerMW(0)
	require.ErrorIs(t, err, ntb.ErrLinkDown)

	require.NoError(t, a.SetLinkDown(false))
	nextEvent(t, b, ntb.LinkEvent)
	require.NoError(t, a.WaitLink(10*time.Second))
	_, err = a.PeerMW(0)
	require.ErrorIs(t, err, ntb.ErrRange, "the link down reset the translation")
	v, err = a.PeerSpadRead(2)
	require.NoError(t, err)
	require.Equal(t, uint32(77), v, "scratchpads survive a link down")
}

func TestLinkDisable(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	require.NoError(t, b.LinkDisable())
	require.False(t, a.LinkIsUp())
	nextEvent(t, a, ntb.LinkEvent)
	require.ErrorIs(t, a.WaitLink(20*time.Millisecond), ntb.ErrLinkDown)
	require.NoError(t, b.LinkEnable())
	require.NoError(t, a.WaitLink(10*time.Second))
}

func TestKilledHostIsSeen(t *testing.T) {
	r := newRing(t, 3, fastOptions())
	r.Hosts[1].Inject(FaultKill)
	left, right := r.Hosts[0].Right, r.Hosts[2].Left
	nextEvent(t, left, ntb.LinkEvent)
	nextEvent(t, right, ntb.LinkEvent)
	require.False(t, left.LinkIsUp())
	require.Eventually(t, left.PeerDead, 10*time.Second, time.Millisecond)
	_, err := r.Hosts[1].Left.SpadRead(0)
	require.ErrorIs(t, err, ntb.ErrClosed)
	require.True(t, r.Hosts[2].Right.LinkIsUp(), "the link between 2 and 0 is untouched")
}

func TestClosedPort(t *testing.T) {
	a, b := pair(newRing(t, 2, fastOptions()))
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	for range a.Events() {
	}
	_, err := a.SpadRead(0)
	require.ErrorIs(t, err, ntb.ErrClosed)
	require.ErrorIs(t, a.PeerDBSet(1), ntb.ErrClosed)
	nextEvent(t, b, ntb.LinkEvent)
	require.False(t, b.LinkIsUp())
	require.False(t, b.PeerDead(), "a closed peer is gone, not dead")
}

// TestStalledHeartbeat: a peer that holds its port but stops beating (a
// hung process) is dead after DeadAfter; one that does not hold its port
// (not attached yet) is never dead, however long it takes.
func TestStalledHeartbeat(t *testing.T) {
	o := fastOptions()
	o.DeadAfter = time.Second
	a, b := pair(newRing(t, 2, o))
	require.True(t, a.LinkIsUp())
	// a's event goroutine has seen the link up before b stops: else the
	// link could go up and down between two of its looks, and it would
	// report nothing.
	nextEvent(t, a, ntb.LinkEvent)
	freeze(b)
	pid := atomic.SwapUint32(b.own.attached(), 0)
	nextEvent(t, a, ntb.LinkEvent)
	// a beats on each look at its peer: two beats on, it has looked since.
	beats := func() uint64 { return atomic.LoadUint64(a.own.heartbeat()) }
	lookedSince := func() {
		t.Helper()
		since := beats()
		require.Eventually(t, func() bool { return beats() >= since+2 }, 10*time.Second, time.Millisecond)
	}
	// Past DeadAfter, and then a has looked at its peer again: it would
	// have found it dead by now, were it to.
	time.Sleep(o.DeadAfter + o.DeadAfter/2)
	lookedSince()
	require.False(t, a.PeerDead(), "a peer not holding its port has no heartbeat to miss")

	// It attaches, late: its heartbeat counts from now, not from before.
	atomic.StoreUint32(b.own.attached(), pid)
	lookedSince()
	require.False(t, a.PeerDead(), "a peer that just attached is not dead")
	// It never beats: dead after DeadAfter.
	require.Eventually(t, a.PeerDead, 10*time.Second, time.Millisecond)
	require.False(t, a.LinkIsUp())
}

// freeze stops p's event goroutines, as a hung process's would stop,
// leaving p closable.
func freeze(p *Port) {
	close(p.quit)
	p.loops.Wait()
	p.quit = make(chan struct{})
	p.loops.Add(1)
	go func() { <-p.quit; p.loops.Done() }()
}

// A host killed in the middle of its own goroutines' work does not fault
// the process they share: it goes on writing through the outbound window
// it mapped and reading its registers, and those writes reach nobody.
func TestKilledHostFaultsNothing(t *testing.T) {
	r := newRing(t, 2, fastOptions())
	a, b := pair(r)
	in, err := b.MWSetTrans(1, 8192)
	require.NoError(t, err)
	out, err := a.PeerMW(1)
	require.NoError(t, err)
	regs := a.own.b

	stop, done := make(chan struct{}), make(chan struct{})
	var rounds atomic.Int64
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			atomic.AddUint32(mem.Word32(out, 4*(i%2048)), 1)
			_ = atomic.LoadUint32(mem.Word32(regs, 0))
			_, _ = a.SpadRead(0)
			_ = a.LinkIsUp()
			rounds.Add(1)
		}
	}()
	// The goroutine works before and after the kill (assert: a failure
	// still stops it).
	working := func(n int64) func() bool { return func() bool { return rounds.Load() >= n } }
	assert.Eventually(t, working(100), 10*time.Second, 100*time.Microsecond, "work before the kill")
	r.Hosts[0].Kill()
	before := append([]byte(nil), in...)
	assert.Eventually(t, working(rounds.Load()+100), 10*time.Second, 100*time.Microsecond, "work after the kill")
	close(stop)
	<-done
	require.Equal(t, before, in, "the dead host's writes reached the peer")
	nextEvent(t, b, ntb.LinkEvent)
	require.Eventually(t, b.PeerDead, 10*time.Second, time.Millisecond)
}

// Calls racing with Close either complete or return ErrClosed: none
// touches the mappings Close releases (Port.enter).
func TestCallsRacingClose(t *testing.T) {
	for range 20 {
		r := newRing(t, 2, fastOptions())
		a, _ := pair(r)
		var wg sync.WaitGroup
		var rounds atomic.Int64
		for range 4 {
			wg.Go(func() {
				for {
					_ = a.LinkIsUp()
					_ = a.DBRead()
					_ = a.Stats()
					_ = a.PeerDBSet(1)
					_, err := a.SpadRead(0)
					if err != nil {
						require.ErrorIs(t, err, ntb.ErrClosed)
						return
					}
					rounds.Add(1)
				}
			})
		}
		// Close while the calls run (assert: a failure still ends them).
		assert.Eventually(t, func() bool { return rounds.Load() >= 20 }, 10*time.Second, 100*time.Microsecond, "calls before Close")
		require.NoError(t, a.Close())
		wg.Wait()
	}
}
