package tcp

import (
	"bytes"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// Issuers locked to their threads (core.Config.LockedCallers, a C
// program's calls) write large puts waiting for socket space in poll(2):
// with small socket buffers every put fills the socket many times over,
// and what lands is what was put, whether one issuer writes or several
// at once, blocking and non-blocking.
func TestLockedCallersLargePuts(t *testing.T) {
	const size = 1 << 20
	doms, _ := openJobWith(t, 2, map[string]string{paramSockBuf.Env: "16K"},
		func(cfg *core.Config) { cfg.LockedCallers = true })
	for _, d := range doms {
		for _, c := range d.conns {
			if c != nil {
				require.True(t, c.w.issuerPolls, "PE %d's connection to %d polls for its issuers", d.rank, c.peer)
			}
		}
	}
	regs := newRegions(t, doms, 4*size)
	const issuers = 4
	srcs := make([][]byte, issuers)
	for i := range srcs {
		srcs[i] = bytes.Repeat([]byte{byte(0x11 * (i + 1))}, size)
		srcs[i][0], srcs[i][size-1] = byte(i), byte(i+100)
	}
	var wg sync.WaitGroup
	errs := make([]error, issuers)
	for i := range issuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ep, err := doms[0].NewEndpoint(core.EndpointOptions{})
			if err != nil {
				errs[i] = err
				return
			}
			defer ep.Close()
			for round := range 3 {
				if round%2 == 0 {
					err = ep.Put(1, regs[0], i*size, srcs[i])
				} else {
					err = ep.PutNBI(1, regs[0], i*size, srcs[i])
				}
				if err == nil {
					err = ep.Quiet()
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "issuer %d", i)
	}
	for i := range issuers {
		require.True(t, bytes.Equal(srcs[i], regs[1].mem[i*size:(i+1)*size]), "issuer %d's put landed whole", i)
	}
}

// advance moves the written position over pieces, empty ones included.
func TestWriterAdvance(t *testing.T) {
	w := &writer{pieces: [][]byte{make([]byte, 3), nil, make([]byte, 5), make([]byte, 2)}}
	w.advance(2)
	require.Equal(t, [2]int{0, 2}, [2]int{w.pv, w.po})
	w.advance(1)
	require.Equal(t, [2]int{2, 0}, [2]int{w.pv, w.po}, "past the end of a piece and the empty one after it")
	w.advance(6)
	require.Equal(t, [2]int{3, 1}, [2]int{w.pv, w.po})
	w.advance(1)
	require.Equal(t, [2]int{4, 0}, [2]int{w.pv, w.po})
}

// Issuers locked to their threads, whose writes wait in poll(2), complete
// round trips to one peer and to several (small puts, fetching atomics and
// gets) with the right values.
func TestLockedCallersRoundTrips(t *testing.T) {
	doms, _ := openJobWith(t, 3, nil, func(cfg *core.Config) { cfg.LockedCallers = true })
	regs := newRegions(t, doms, 4096)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep := newEndpoint(t, doms[0])
	defer ep.Close()
	const rounds = 200
	for i := range rounds {
		pe := 1 + i%2
		old, err := ep.FetchAtomic(pe, regs[0], 0, core.AtomicAdd, core.Uint64, 1, 0)
		require.NoError(t, err)
		require.EqualValues(t, i/2, old, "round %d", i)
		require.NoError(t, ep.PutValue(pe, regs[0], 8, uint64(i), 8))
		if i%3 == 0 {
			// Both peers owe an acknowledgement.
			require.NoError(t, ep.PutValue(3-pe, regs[0], 16, uint64(i), 8))
		}
		require.NoError(t, ep.Quiet())
		v, err := ep.GetValue(pe, regs[0], 8, 8)
		require.NoError(t, err)
		require.EqualValues(t, i, v)
	}
}
