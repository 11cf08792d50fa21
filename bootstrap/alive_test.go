package bootstrap

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// freezer forwards one connection to target, and on freeze stops
// forwarding either way, as a stopped process at one end would: its
// connection stays open, nothing more arrives.
type freezer struct {
	ln     net.Listener
	frozen chan struct{} // closed by freeze
	once   sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newFreezer(t *testing.T, target string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &freezer{ln: ln, frozen: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		a, err := ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", target)
		if err != nil {
			a.Close()
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, a, b)
		f.mu.Unlock()
		f.wg.Add(2)
		go f.pipe(a, b)
		go f.pipe(b, a)
	}()
	t.Cleanup(f.close)
	return f
}

func (f *freezer) pipe(dst, src net.Conn) {
	defer f.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-f.frozen:
			// Drain and drop, until the test ends the connections.
			if err != nil {
				return
			}
			continue
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				dst.(*net.TCPConn).CloseWrite()
			}
			return
		}
	}
}

func (f *freezer) freeze() { f.once.Do(func() { close(f.frozen) }) }

func (f *freezer) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// A store with a dead-after loses a member that goes silent, though its
// connection stays open (its process stopped), and the others' collective
// ends naming it; the silent member, hearing nothing from the store
// either, loses the store in as long. Members that keep sending ALIVE
// are not lost while idle.
func TestSilentMemberIsLost(t *testing.T) {
	const deadAfter = time.Second
	ts := startStore(t, 3, testSecret, func(s *Server) { s.DeadAfter = deadAfter })
	fz := newFreezer(t, ts.addr)
	cs := make([]*Client, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range cs {
		addr := ts.addr
		if r == 1 {
			addr = fz.ln.Addr().String()
		}
		wg.Go(func() { cs[r], errs[r] = Dial(addr, r, 3, testSecret, watchdog) })
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	// Idle for several dead-afters: ALIVE keeps everyone a member. That
	// nobody is lost can only be shown over time.
	_, errs2 := allgatherAll(cs, func(int) []byte { return nil })
	for r, err := range errs2 {
		require.NoError(t, err, "rank %d", r)
	}
	idle := time.NewTimer(3 * deadAfter)
	<-idle.C
	for r, c := range cs {
		require.NoError(t, c.Err(), "rank %d lost while idle", r)
	}

	fz.freeze()
	start := time.Now()
	waiting := make(chan error, 1)
	go func() { waiting <- cs[0].Barrier() }()
	select {
	case err := <-waiting:
		var pl *core.PeerLostError
		require.ErrorAs(t, err, &pl)
		require.Equal(t, 1, pl.PE)
		require.Contains(t, pl.Reason, "sent the store nothing")
		require.Less(t, time.Since(start), 10*deadAfter)
	case <-time.After(watchdog):
		t.Fatal("the barrier did not end when PE 1 went silent")
	}
	ts.events.wait(t, EventLost, 1)
	// PE 1 hears nothing from the store: it loses the store.
	require.Eventually(t, func() bool { return cs[1].Err() != nil }, watchdog, time.Millisecond)
	require.Contains(t, cs[1].Err().Error(), "sent nothing")
}
