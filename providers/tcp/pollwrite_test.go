package tcp

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"

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

// Issuers locked to their threads read what the socket holds before
// their quiet sleeps (serveOnce): windows of small non-blocking puts from
// two such issuers to two peers, each window quieted, all land, while the
// peers put back to this PE, whose frames the issuers apply too.
func TestLockedCallersQuietWindows(t *testing.T) {
	doms, _ := openJobWith(t, 3, nil, func(cfg *core.Config) { cfg.LockedCallers = true })
	const windows, window = 50, 64
	regs := newRegions(t, doms, 2*3*window*8)
	run := func(d *domain, issuer int, peers []int, errs chan<- error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ep, err := d.NewEndpoint(core.EndpointOptions{})
		if err != nil {
			errs <- err
			return
		}
		defer ep.Close()
		var v [8]byte
		for w := range windows {
			for i := range window {
				binary.LittleEndian.PutUint64(v[:], uint64(w*window+i))
				for _, pe := range peers {
					off := (issuer*window + i) * 8
					if err := ep.PutNBI(pe, regs[d.rank], off, v[:]); err != nil {
						errs <- err
						return
					}
				}
			}
			if err := ep.Quiet(); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}
	errs := make(chan error, 4)
	go run(doms[0], 0, []int{1, 2}, errs)
	go run(doms[0], 1, []int{1, 2}, errs)
	go run(doms[1], 2, []int{0}, errs)
	go run(doms[2], 3, []int{0}, errs)
	for range 4 {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("the issuers did not finish in a minute")
		}
	}
	last := func(pe, issuer, i int) uint64 {
		off := (issuer*window + i) * 8
		return binary.LittleEndian.Uint64(regs[pe].mem[off : off+8])
	}
	for i := range window {
		for _, pe := range []int{1, 2} {
			for issuer := range 2 {
				require.EqualValues(t, (windows-1)*window+i, last(pe, issuer, i), "PE %d, issuer %d, word %d", pe, issuer, i)
			}
		}
		for issuer := 2; issuer < 4; issuer++ {
			require.EqualValues(t, (windows-1)*window+i, last(0, issuer, i), "PE 0, issuer %d, word %d", issuer, i)
		}
	}
}
