package loopback

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// A bad GOSHMEM_LOOPBACK_WAKE fails naming what is allowed.
func TestWakeParam(t *testing.T) {
	t.Parallel()
	{
		j := newJob(t, 1)
		j.env[paramWake.Env] = "epoll"
		prov, err := core.Lookup(Name)
		require.NoError(t, err)
		_, err = prov.Open(j.cfg(0))
		var envErr *core.EnvError
		require.ErrorAs(t, err, &envErr)
		require.Equal(t, paramWake.Env, envErr.Var)
		require.ErrorContains(t, err, `"futex", "poller" or "auto"`)
	}
}

// A domain whose waiters sleep in the poller does not offer its words
// under the protocol's name: a writer of PROTOCOL.md would not poke.
func TestPollerProtocolName(t *testing.T) {
	t.Parallel()
	for _, wake := range []string{WakeFutex, WakePoller} {
		j := newJob(t, 2)
		j.env[paramWake.Env] = wake
		j.run(func(p *peT) {
			name, _ := p.dom.SharedProtocol()
			if wake == WakePoller {
				require.NotEqual(p, ProtocolName, name)
				require.NotNil(p, p.dom.pw)
			} else {
				require.Equal(p, ProtocolName, name)
				require.Nil(p, p.dom.pw)
			}
		})
	}
}

// PEs may sleep differently: a PE on the futex and one in the poller
// wake each other, the pipes made for both.
func TestMixedWake(t *testing.T) {
	t.Parallel()
	j := newJob(t, 2)
	j.env["GOSHMEM_LOOPBACK_SPIN"] = "0"
	j.config = func(rank int, cfg *core.Config) {
		env := cfg.Env
		cfg.Env = func(k string) (string, bool) {
			if k == paramWake.Env {
				return []string{WakeFutex, WakePoller}[rank], true
			}
			return env(k)
		}
	}
	j.run(func(p *peT) {
		require.NotNil(p, p.dom.pw, "every PE has the pipes")
		require.Equal(p, p.rank == 1, p.dom.pollSleep)
		r, ep := p.region(64, core.EndpointOptions{})
		w := core.LocalWaiter(p.dom)
		for waiter := range 2 {
			if p.rank == waiter {
				seq, watch := w.WaitArm(r, 8, 8)
				p.barrier()
				for atomic.LoadUint64(mem.Word64(r.Local(), 8)) != uint64(waiter+1) {
					seq = w.WaitChange(seq, time.Minute)
				}
				w.WaitDisarm(watch)
			} else {
				p.barrier()
				c := p.dom.ctl[waiter]
				asleep := []*uint32{c.sleepers, c.pollers}[waiter]
				waitFor(func() bool { return atomic.LoadUint32(asleep) == 1 })
				require.NoError(p, ep.PutValue(waiter, r, 8, uint64(waiter+1), 8))
			}
			p.barrier()
		}
	})
}

// A PE that sleeps in the poller fences symmetrically: the job does.
func TestPollerFencesSymmetrically(t *testing.T) {
	t.Parallel()
	j := newJob(t, 2)
	j.env[paramWake.Env] = WakePoller
	j.run(func(p *peT) {
		require.False(p, p.dom.asym)
		require.True(p, p.dom.pollSleep)
	})
}
