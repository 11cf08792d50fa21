package loopback

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
)

// TestFenceMode: auto fences asymmetrically exactly where this process can
// register for the global barrier, atomic never, and a job does only if
// every PE can.
func TestFenceMode(t *testing.T) {
	t.Parallel()
	can := storesOrdered && sys.RegisterGlobalBarrier() == nil
	for _, tc := range []struct {
		name   string
		fences [2]string
		want   bool
	}{
		{"auto", [2]string{"auto", " auto "}, can},
		{"atomic", [2]string{"atomic", "atomic"}, false},
		{"mixed", [2]string{"auto", "atomic"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, 2)
			j.config = func(rank int, cfg *core.Config) {
				env := cfg.Env
				cfg.Env = func(k string) (string, bool) {
					if k == paramFence.Env {
						return tc.fences[rank], true
					}
					return env(k)
				}
			}
			j.run(func(p *peT) {
				require.Equal(p, tc.want, p.dom.asym)
				ep, err := p.dom.NewEndpoint(core.EndpointOptions{Serialized: true})
				require.NoError(p, err)
				require.Equal(p, tc.want, ep.(*endpoint).plain)
				ep, err = p.dom.NewEndpoint(core.EndpointOptions{})
				require.NoError(p, err)
				require.False(p, ep.(*endpoint).plain, "an endpoint shared by goroutines counts atomically")
			})
		})
	}
}

func TestFenceModeInvalid(t *testing.T) {
	t.Parallel()
	j := newJob(t, 1)
	j.env[paramFence.Env] = "none"
	prov, err := core.Lookup(Name)
	require.NoError(t, err)
	_, err = prov.Open(j.cfg(0))
	var envErr *core.EnvError
	require.ErrorAs(t, err, &envErr)
	require.Equal(t, paramFence.Env, envErr.Var)
	require.ErrorIs(t, err, core.ErrInvalid)
}

func TestAllAsymmetric(t *testing.T) {
	msg := func(flag byte) []byte { return append(make([]byte, fenceOff), flag, 0, 'h') }
	for _, tc := range []struct {
		flags []byte
		want  bool
		bad   bool
	}{
		{[]byte{1}, true, false},
		{[]byte{1, 1, 1}, true, false},
		{[]byte{1, 0, 1}, false, false},
		{[]byte{0, 0}, false, false},
		{[]byte{1, 2}, false, true},
	} {
		all := make([][]byte, len(tc.flags))
		for i, f := range tc.flags {
			all[i] = msg(f)
		}
		got, err := allAsymmetric(all)
		if tc.bad {
			require.ErrorIs(t, err, core.ErrInvalid, "flags %v", tc.flags)
			continue
		}
		require.NoError(t, err, "flags %v", tc.flags)
		require.Equal(t, tc.want, got, "flags %v", tc.flags)
	}
}

// FuzzOpenExchange feeds Open's checks of its exchange arbitrary parts:
// they return an error or an answer, never crash.
func FuzzOpenExchange(f *testing.F) {
	valid := append(make([]byte, fenceOff), 1, 1, 0)
	valid = append(valid, "host"...)
	f.Add(valid, valid)
	f.Add(valid, []byte{1, 2, 3})
	f.Add(valid, append(append(make([]byte, fenceOff), 7, 1, 0), "host"...))
	f.Add(valid, append(append(make([]byte, fenceOff), 1, 9, 0), "host"...))
	f.Add(valid, append(append(make([]byte, fenceOff), 1, 1, 1), "host"...))
	f.Add(valid, append(append(make([]byte, fenceOff), 1, 1, 5), "host"...))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		all := [][]byte{a, b}
		if sameHost(all) != nil {
			return
		}
		for _, off := range []int{fenceOff, barrierOff} {
			yes, err := allSet(all, off, "flag")
			if err == nil && yes {
				require.Equal(t, byte(1), a[off])
				require.Equal(t, byte(1), b[off])
			}
		}
		if yes, err := anyPoller(all); err == nil {
			require.Equal(t, yes, a[wakeOff] == 1 || b[wakeOff] == 1)
		}
	})
}

// TestNoLostWakeup races a writer's one put with its target arming to
// wait for it, round after round: were the handshake between them broken
// (see notify), some round would find the put neither seen by the waiter's
// check nor waking its sleep, and would end only when the sleep timed
// out. It counts those rounds, which must be none. A sleep that times out
// because the writer had not put yet (this machine is shared, and a
// writer may be descheduled for longer than the sleep) is not one: the
// round counts only if the put had returned, without bumping seq.
func TestNoLostWakeup(t *testing.T) {
	t.Parallel()
	rounds := 50000
	if testing.Short() {
		rounds = 5000
	}
	for _, c := range []struct{ fence, wake string }{{"auto", WakeFutex}, {"atomic", WakeFutex}, {"auto", WakePoller}, {"atomic", WakePoller}} {
		fence := c.fence
		t.Run(c.fence+"/"+c.wake, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, 2)
			j.env[paramFence.Env] = fence
			j.env[paramWake.Env] = c.wake
			var ready atomic.Uint64 // the round PE 1 is arming for
			var put atomic.Uint64   // the round PE 0 has put
			var lost int
			j.run(func(p *peT) {
				r, ep := p.region(64, core.EndpointOptions{Serialized: true})
				w := core.LocalWaiter(p.dom)
				flag := mem.Word64(r.Local(), 8)
				p.barrier()
				for round := uint64(1); round <= uint64(rounds); round++ {
					if p.rank == 0 {
						// Poll tightly (yielding now and then, for a
						// shared core), then wait a varying few nanoseconds,
						// so that the put sweeps across PE 1's arming.
						for i := 1; ready.Load() != round; i++ {
							if i%256 == 0 {
								sys.Yield()
							}
						}
						for range rand.IntN(64) {
							ready.Load()
						}
						require.NoError(p, ep.PutValue(1, r, 8, round, 8))
						put.Store(round)
						continue
					}
					ready.Store(round)
					seq, watch := w.WaitArm(r, 8, 8)
					for atomic.LoadUint64(flag) != round {
						// A put that lands wakes this sleep at once; a
						// lost one leaves it to time out, with seq as it
						// was, marked settled. Where the job fences
						// asymmetrically, the first call returns after
						// the barrier without sleeping, marked too.
						slept := seq&settled != 0 || !p.dom.asym
						got := w.WaitChange(seq, 20*time.Millisecond)
						if slept && got == seq|settled && put.Load() == round && atomic.LoadUint32(p.dom.self.seq) == got&^settled {
							lost++
						}
						seq = got
					}
					w.WaitDisarm(watch)
				}
				p.barrier()
			})
			require.Zero(t, lost, "rounds of %d whose put woke nobody", rounds)
		})
	}
}

// TestNoLostSelfPoke is TestNoLostWakeup for a wake-up from inside the
// waiter's own process, as the composite's inter-host transport gives
// one (WaitPoke after it applied a peer's frame): another goroutine of
// the PE stores the flag and pokes, sweeping across the waiter's arming
// and sleeping. In the poller that poke sets a read deadline in the past
// rather than writing the pipe (poke, made direct here whatever
// GOMAXPROCS is), and the sleeper may replace it with its own. A poke
// always moves seq, so a lost one shows as a sleep that ran to its
// timeout although the poke came long before: such rounds must be none.
// "Long before" is a fifth of a second, far beyond what a loaded machine
// keeps a woken thread from its CPU, so that such a delay is not taken for
// a lost poke; a lost one sleeps the whole timeout, whatever it is.
func TestNoLostSelfPoke(t *testing.T) {
	t.Parallel()
	rounds := 50000
	if testing.Short() {
		rounds = 5000
	}
	const sleep, late = 250 * time.Millisecond, 200 * time.Millisecond
	for _, wake := range []string{WakeFutex, WakePoller} {
		t.Run(wake, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, 1)
			j.env[paramWake.Env] = wake
			var ready atomic.Uint64 // the round the waiter is arming for
			var pokeAt atomic.Int64 // when the last poke began, unix ns
			var lost int
			j.run(func(p *peT) {
				r, _ := p.region(64, core.EndpointOptions{})
				if p.dom.pw != nil {
					p.dom.pw.direct = true
				}
				w := core.LocalWaiter(p.dom)
				flag := mem.Word64(r.Local(), 8)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for round := uint64(1); round <= uint64(rounds); round++ {
						for i := 1; ready.Load() != round; i++ {
							if i%256 == 0 {
								sys.Yield()
							}
						}
						for range rand.IntN(64) {
							ready.Load()
						}
						pokeAt.Store(time.Now().UnixNano())
						atomic.StoreUint64(flag, round)
						p.dom.WaitPoke()
						// As the transport's reader parks once it has
						// applied what came, so the woken waiter runs.
						runtime.Gosched()
					}
				}()
				for round := uint64(1); round <= uint64(rounds); round++ {
					ready.Store(round)
					seq, watch := w.WaitArm(r, 8, 8)
					for atomic.LoadUint64(flag) != round {
						start := time.Now()
						seq = w.WaitChange(seq, sleep)
						end := time.Now()
						if end.Sub(start) >= sleep && atomic.LoadUint64(flag) == round && end.UnixNano()-pokeAt.Load() > int64(late) {
							lost++
						}
					}
					w.WaitDisarm(watch)
				}
				<-done
			})
			require.Zero(t, lost, "rounds of %d whose poke woke nobody", rounds)
		})
	}
}

// A waiter that sleeps in the poller first yields the CPU while its busy
// function (a composite's other transport's InputPending) says that no
// input waits, looking at it between yields, and sleeps at its first yes;
// a store in the meantime ends the wait.
func TestWaitYieldsWhileIdle(t *testing.T) {
	j := newJob(t, 1)
	j.env[paramWake.Env] = WakePoller
	j.run(func(p *peT) {
		d := p.dom
		require.True(t, d.pollSleep)
		require.Equal(t, int32(1), domainsHere.Load(), "another domain open in this process")
		r, _ := p.region(64, core.EndpointOptions{})
		var looks atomic.Int32
		var input atomic.Bool
		d.SetWaitYield(func() bool {
			looks.Add(1)
			return input.Load()
		})
		seq, watch := d.WaitArm(r, 0, 8)
		defer d.WaitDisarm(watch)

		// Nothing stored: yields for yieldFor, looking, then the sleep.
		start := time.Now()
		require.Equal(t, seq, d.WaitChange(seq, time.Millisecond)&^settled)
		require.GreaterOrEqual(t, time.Since(start), yieldFor+time.Millisecond)
		require.Positive(t, looks.Load(), "looked before yielding")

		// Input waits: one look, and the sleep.
		looks.Store(0)
		input.Store(true)
		require.Equal(t, seq, d.WaitChange(seq, time.Millisecond)&^settled)
		require.Equal(t, int32(1), looks.Load())

		// A store while it yields: seen at the next look.
		input.Store(false)
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		require.NoError(t, err)
		defer ep.Close()
		looks.Store(0)
		done := make(chan error, 1)
		go func() {
			// Once it looks, yielding still or asleep since: the write
			// wakes it either way.
			for looks.Load() == 0 {
				runtime.Gosched()
			}
			done <- ep.Atomic(0, r, 0, core.AtomicWrite, core.Uint64, 1)
		}()
		require.NotEqual(t, seq, d.WaitChange(seq, time.Hour)&^settled)
		require.NoError(t, <-done)
	})
}
