package loopback

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// TestBarrierHoldsEveryPE: no PE leaves barrier k before every PE has
// entered it, round after round, back to back, spinning or not, by
// dissemination (the job has a CPU per PE) and by counter (it has not),
// at PE counts that are and are not powers of two.
func TestBarrierHoldsEveryPE(t *testing.T) {
	t.Parallel()
	const rounds = 300
	for _, n := range []int{1, 2, 3, 5} {
		for _, spin := range []string{"0", "auto"} {
			for _, cpus := range []int{1, 64} {
				t.Run(strconv.Itoa(n)+"/spin="+spin+"/cpus="+strconv.Itoa(cpus), func(t *testing.T) {
					t.Parallel()
					j := newJob(t, n)
					j.env["GOSHMEM_LOOPBACK_SPIN"] = spin
					j.env[core.EnvCPUs] = strconv.Itoa(cpus)
					var arrived [rounds]atomic.Int32
					j.run(func(p *peT) {
						require.Equal(p, n <= cpus, p.dom.dissemination, "dissemination")
						for r := range rounds {
							arrived[r].Add(1)
							require.NoError(p, p.dom.Barrier())
							require.EqualValues(p, n, arrived[r].Load(), "round %d: left the barrier before every PE entered it", r)
						}
					})
				})
			}
		}
	}
}

// TestBarrierKindAgreed: PEs that disagree on whether each has a CPU all
// take the counter barrier, the one that serves either case.
func TestBarrierKindAgreed(t *testing.T) {
	t.Parallel()
	j := newJob(t, 3)
	j.config = func(rank int, cfg *core.Config) {
		env := cfg.Env
		cfg.Env = func(k string) (string, bool) {
			if k == core.EnvCPUs {
				return []string{"64", "64", "1"}[rank], true
			}
			return env(k)
		}
	}
	j.run(func(p *peT) {
		require.False(p, p.dom.dissemination)
		for range 50 {
			require.NoError(p, p.dom.Barrier())
		}
	})
}

// TestBarrierEndsOnLostPE: a PE that never arrives because it died ends
// the others' barrier with core.ErrPeerLost.
func TestBarrierEndsOnLostPE(t *testing.T) {
	t.Parallel()
	j := newJob(t, 3)
	j.runRaw(func(p *peT) {
		d, err := provider{}.Open(j.cfg(p.rank))
		require.NoError(p, err)
		p.barrier()
		if p.rank == 2 {
			p.boot.Kill()
			p.releaseAtEnd(d)
			return
		}
		err = d.(core.Barrierer).Barrier()
		require.ErrorIs(p, err, core.ErrPeerLost)
		require.ErrorIs(p, d.Close(), core.ErrPeerLost)
	})
}

// TestBarrierCheckEndsWait: the caller's check ends a barrier that waits
// for a PE that has not arrived, with the check's error; the same PE's
// next barrier is refused once the domain is closed.
func TestBarrierCheckEndsWait(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	j := newJob(t, 2)
	done := make(chan struct{})
	j.run(func(p *peT) {
		if p.rank == 1 {
			<-done
			require.NoError(p, p.dom.Barrier(), "the aborted PE's arrival still counts")
			return
		}
		calls := 0
		start := time.Now()
		err := p.dom.BarrierCheck(func() error {
			calls++
			if time.Since(start) > 20*time.Millisecond {
				return stop
			}
			return nil
		})
		close(done)
		require.ErrorIs(p, err, stop)
		require.Greater(p, calls, 1, "check is called while the barrier waits")
	})
	d := &domain{npes: 2}
	d.closed.Store(true)
	require.ErrorIs(t, d.Barrier(), core.ErrClosed)
}
