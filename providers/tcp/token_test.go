package tcp

import (
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// within fails t unless f returns within d.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %v", what, d)
	}
}

// A holder of the receive token other than the reader goroutine applies
// frames as the reader does, and once it lets the token go the reader
// reads what comes next: a put that follows, whose quiet needs PE 0 to
// read it, completes. A lost wake-up would leave it waiting.
func TestTokenHandsBack(t *testing.T) {
	doms, _ := openJob(t, 2, map[string]string{paramPoll.Env: "1ms"})
	regs := newRegions(t, doms, 4096)
	ep := newEndpoint(t, doms[1])
	c := doms[0].conns[1]
	word := func(off int) uint64 { return binary.NativeEndian.Uint64(regs[0].mem[off:]) }
	for i := range 200 {
		v := uint64(i + 1)
		c.rd.tok.Lock()
		require.NoError(t, ep.PutValue(0, regs[1], 0, v, 8))
		deadline := time.Now().Add(10 * time.Second)
		for word(0) != v {
			require.False(t, c.rd.end)
			require.True(t, time.Now().Before(deadline), "the token holder never read put %d", i)
			c.serve(nil)
			runtime.Gosched()
		}
		c.rd.tok.Unlock()
		require.NoError(t, ep.PutValue(0, regs[1], 8, v, 8))
		within(t, 10*time.Second, "quiet after the token came back", ep.Quiet)
		require.Equal(t, v, word(8))
	}
}

// Both PEs issue gets, fetching atomics and puts with quiet to each other
// at once while polling, so issuers holding the token serve the other
// PE's requests: nothing deadlocks and every atomic counts once.
func TestTokenServesBothWays(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("two PEs poll only on a host with two CPUs")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	doms, _ := openJob(t, 2, map[string]string{paramPoll.Env: "1ms"})
	regs := newRegions(t, doms, 4096)
	eps := []*endpoint{newEndpoint(t, doms[0]), newEndpoint(t, doms[1])}
	const rounds = 3000
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for pe := range 2 {
		wg.Go(func() {
			ep, peer, r := eps[pe], 1-pe, regs[pe]
			for i := range rounds {
				if _, err := ep.FetchAtomic(peer, r, 0, core.AtomicAdd, core.Uint64, 1, 0); err != nil {
					errs[pe] = err
					return
				}
				if err := ep.PutValue(peer, r, 8+pe*8, uint64(i), 8); err != nil {
					errs[pe] = err
					return
				}
				if i%3 == 0 {
					if err := ep.Quiet(); err != nil {
						errs[pe] = err
						return
					}
				}
				if _, err := ep.GetValue(peer, r, 8+pe*8, 8); err != nil {
					errs[pe] = err
					return
				}
			}
			errs[pe] = ep.Quiet()
		})
	}
	within(t, 60*time.Second, "both PEs' traffic", func() error { wg.Wait(); return nil })
	for pe, err := range errs {
		require.NoError(t, err, "PE %d", pe)
		require.Equal(t, uint64(rounds), binary.NativeEndian.Uint64(regs[pe].mem[0:]), "fetch-adds applied on PE %d", pe)
		require.Equal(t, uint64(rounds-1), binary.NativeEndian.Uint64(regs[pe].mem[8+(1-pe)*8:]), "last put to PE %d", pe)
	}
}
