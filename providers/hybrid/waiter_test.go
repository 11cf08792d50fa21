package hybrid_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/providers/hybrid"
	"github.com/goshmem/goshmem/providers/loopback"
)

// A PE waiting in the composite is woken by a write to the bytes it
// watches from a PE of its own host and from a PE of another, and not by
// writes elsewhere, with loopback's waiters on the futex and in the
// poller: with tcp between hosts, the waiter sleeps in loopback, poked by
// tcp; with a transport between hosts that cannot tell of its changes
// (as a plugin), forwarder goroutines wake it.
func TestWaiterWokenByEitherHost(t *testing.T) {
	ps := registered(t, "tcp", "loopback")
	tcp, lo := ps[0], ps[1]
	for _, c := range []struct {
		name  string
		p     core.Provider // nil: as core.Open composes it
		poked bool
	}{
		{"poked", nil, true},
		{"forwarded", &hybrid.Provider{Inter: untold{tcp}, Intra: lo}, false},
	} {
		for _, wake := range []string{loopback.WakeFutex, loopback.WakePoller} {
			t.Run(c.name+"/"+wake, func(t *testing.T) {
				waiterWoken(t, c.p, c.poked, map[string]string{loopback.EnvWake: wake})
			})
		}
	}
}

// untold is a provider whose domains are LocalWaiters that do not tell
// of their changes (no core.WaitNotifier), as a plugin's.
type untold struct{ core.Provider }

func (p untold) Open(cfg *core.Config) (core.Domain, error) {
	d, err := p.Provider.Open(cfg)
	if err != nil {
		return nil, err
	}
	return struct {
		core.Domain
		core.LocalWaiter
	}{d, d.(core.LocalWaiter)}, nil
}

func waiterWoken(t *testing.T, p core.Provider, poked bool, env map[string]string) {
	jobLookup := jobEnv(t, env)
	hosts := []string{"a", "a", "b", "b"}
	boots := bootstrap.NewLocal(len(hosts))
	doms := make([]core.Domain, len(hosts))
	regs := make([]core.Region, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for pe, b := range boots {
		wg.Go(func() {
			cfg := &core.Config{Bootstrap: b, JobID: "waiter-test", Env: jobLookup, HostID: hosts[pe]}
			d, err := openPE(cfg, p)
			if err == nil {
				doms[pe] = d
				regs[pe], err = d.NewRegion(4096)
			}
			errs[pe] = err
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		var cw sync.WaitGroup
		for pe, d := range doms {
			if d != nil {
				cw.Go(func() { errs[pe] = errors.Join(d.Close(), boots[pe].Close()) })
			}
		}
		cw.Wait()
		for pe, err := range errs {
			require.NoError(t, err, "close PE %d", pe)
		}
	})
	for pe, err := range errs {
		require.NoError(t, err, "open PE %d", pe)
	}
	require.Equal(t, poked, hybrid.Poked(doms[0]), "whether the waiter sleeps in loopback, poked")
	w, ok := doms[0].(core.LocalWaiter)
	require.True(t, ok, "the composite is not a core.LocalWaiter")

	for _, writer := range []int{1, 2} { // this host's PE, the other host's
		ep, err := doms[writer].NewEndpoint(core.EndpointOptions{})
		require.NoError(t, err)
		seq, watch := w.WaitArm(regs[0], 64, 8)
		require.NoError(t, ep.PutValue(0, regs[writer], 512, 1, 8))
		require.NoError(t, ep.Quiet()) // applied, and the waiters told
		if poked {
			// A forwarder may still report a change from before the
			// arm (a spurious notice, never a missed one); the poked
			// waiter is woken for the watched bytes alone.
			require.Equal(t, seq, w.WaitChange(seq, 0), "PE %d's put to other bytes woke the waiter", writer)
		}

		// Wake-ups may be spurious: the waiter re-checks the word, as
		// every caller does, and sleeps a minute at a time, so a missed
		// one shows.
		word := mem.Word64(regs[0].Local(), 64)
		want := atomic.LoadUint64(word) + 1
		woke := make(chan struct{})
		go func() {
			for s := seq; atomic.LoadUint64(word) != want; {
				s = w.WaitChange(s, time.Minute)
			}
			close(woke)
		}()
		require.NoError(t, ep.Atomic(0, regs[writer], 64, core.AtomicAdd, core.Uint64, 1))
		require.NoError(t, ep.Quiet())
		select {
		case <-woke:
		case <-time.After(30 * time.Second):
			t.Fatalf("PE %d's atomic on the watched word did not wake the waiter", writer)
		}
		w.WaitDisarm(watch)
		require.NoError(t, ep.Close())
	}
}
