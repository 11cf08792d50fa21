package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goshmem/goshmem/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// watchdog bounds every wait in these tests: a hang fails instead of
// stalling the suite. It is a limit, never a synchronisation.
const watchdog = 10 * time.Second

var testSecret = []byte("0123456789abcdef")

// eventLog collects a server's events and lets a test wait for one.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	wake   chan struct{}
}

func newEventLog() *eventLog { return &eventLog{wake: make(chan struct{})} }

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// wait returns the first event matching kind and rank.
func (l *eventLog) wait(t *testing.T, kind EventKind, rank int) Event {
	t.Helper()
	return l.waitFor(t, fmt.Sprintf("%v event for rank %d", kind, rank),
		func(e Event) bool { return e.Kind == kind && e.Rank == rank })
}

// waitFor returns the first event that matches.
func (l *eventLog) waitFor(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	var found Event
	l.until(t, what, func(evs []Event) bool {
		for _, e := range evs {
			if match(e) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// waitCount waits until exactly n events of kind have been delivered.
func (l *eventLog) waitCount(t *testing.T, kind EventKind, n int) {
	t.Helper()
	l.until(t, fmt.Sprintf("%d %v events", n, kind), func([]Event) bool { return l.countLocked(kind) >= n })
	require.Equal(t, n, l.count(kind))
}

func (l *eventLog) until(t *testing.T, what string, cond func([]Event) bool) {
	t.Helper()
	deadline := time.After(watchdog)
	for {
		l.mu.Lock()
		ok := cond(l.events)
		wake := l.wake
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("no %s within %v", what, watchdog)
		}
	}
}

func (l *eventLog) countLocked(kind EventKind) int {
	n := 0
	for _, e := range l.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func (l *eventLog) count(kind EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.countLocked(kind)
}

type testStore struct {
	srv    *Server
	addr   string
	events *eventLog
}

func startStore(t *testing.T, size int, secret []byte, configure ...func(*Server)) *testStore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts := &testStore{srv: NewServer(ln, size, secret), addr: ln.Addr().String(), events: newEventLog()}
	ts.srv.OnEvent = ts.events.add
	ts.srv.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	ts.srv.HandshakeTimeout = 2 * time.Second
	for _, f := range configure {
		f(ts.srv)
	}
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve() }()
	t.Cleanup(func() {
		require.NoError(t, ts.srv.Close())
		require.NoError(t, <-done)
	})
	return ts
}

func dialAll(t *testing.T, addr string, size int, secret []byte) []*Client {
	t.Helper()
	cs := make([]*Client, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range cs {
		wg.Go(func() { cs[r], errs[r] = Dial(addr, r, size, secret, watchdog) })
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// allgatherAll runs one allgather on every client at once; contrib gives
// each rank's data.
func allgatherAll(cs []*Client, contrib func(rank int) []byte) ([][][]byte, []error) {
	out := make([][][]byte, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { out[r], errs[r] = c.Allgather(contrib(r)) })
	}
	wg.Wait()
	return out, errs
}

func TestAllgatherAcrossClients(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			ts := startStore(t, n, testSecret)
			cs := dialAll(t, ts.addr, n, testSecret)
			for r, c := range cs {
				require.Equal(t, r, c.Rank())
				require.Equal(t, n, c.Size())
			}
			out, errs := allgatherAll(cs, func(r int) []byte { return []byte(fmt.Sprintf("PE %d", r)) })
			for r := range cs {
				require.NoError(t, errs[r])
				require.Len(t, out[r], n)
				for pe, d := range out[r] {
					require.Equal(t, fmt.Sprintf("PE %d", pe), string(d), "rank %d's view of PE %d", r, pe)
				}
			}
			for _, c := range cs {
				require.NoError(t, c.Err())
			}
		})
	}
}

func TestManyRoundsBackToBack(t *testing.T) {
	const n, rounds = 4, 300
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r, c := range cs {
		wg.Go(func() {
			for k := range rounds {
				if k%3 == 0 {
					if err := c.Barrier(); err != nil {
						errs[r] = fmt.Errorf("round %d: %w", k, err)
						return
					}
					continue
				}
				// Sizes vary by round and rank, empty included.
				mine := bytes.Repeat([]byte{byte(r)}, (k*7+r)%50)
				all, err := c.Allgather(mine)
				if err != nil {
					errs[r] = fmt.Errorf("round %d: %w", k, err)
					return
				}
				for pe, d := range all {
					if !bytes.Equal(d, bytes.Repeat([]byte{byte(pe)}, (k*7+pe)%50)) {
						errs[r] = fmt.Errorf("round %d: PE %d's contribution is %x", k, pe, d)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

// crash makes a client vanish as if its process died: the connection
// closes with no BYE.
func crash(c *Client) {
	c.conn.Close()
	<-c.readerDone
}

func TestLostMemberFailsOthers(t *testing.T) {
	const n = 4
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	require.NoError(t, barrierAll(cs))

	// Ranks 0 and 1 wait in a collective that rank 3 will never enter;
	// rank 2 is busy elsewhere and only polls Err.
	pending := make(chan error, 2)
	for _, c := range cs[:2] {
		go func() {
			_, err := c.Allgather([]byte("x"))
			pending <- err
		}()
	}
	start := time.Now()
	crash(cs[3])

	for range 2 {
		select {
		case err := <-pending:
			var pl *core.PeerLostError
			require.ErrorAs(t, err, &pl)
			require.Equal(t, 3, pl.PE)
			require.ErrorIs(t, err, core.ErrPeerLost)
		case <-time.After(watchdog):
			t.Fatal("a pending collective did not fail after its peer was lost")
		}
	}
	require.Eventually(t, func() bool { return cs[2].Err() != nil }, watchdog, time.Millisecond)
	t.Logf("loss noticed by every member within %v", time.Since(start))
	for _, c := range cs[:3] {
		var pl *core.PeerLostError
		require.ErrorAs(t, c.Err(), &pl)
		require.Equal(t, 3, pl.PE)
		require.Contains(t, pl.Reason, "without finalizing")
		// Later collectives fail at once, with the same error.
		_, err := c.Allgather(nil)
		require.ErrorAs(t, err, &pl)
		require.Equal(t, 3, pl.PE)
	}
	e := ts.events.wait(t, EventLost, 3)
	require.Contains(t, e.Reason, "without finalizing")
}

func barrierAll(cs []*Client) error {
	_, errs := allgatherAll(cs, func(int) []byte { return nil })
	return errors.Join(errs...)
}

func TestLossDuringRoundThatCompleted(t *testing.T) {
	// A member lost after a round completed does not undo that round.
	const n = 3
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	out, errs := allgatherAll(cs, func(r int) []byte { return []byte{byte(r)} })
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, [][]byte{{0}, {1}, {2}}, out[0])
	crash(cs[1])
	ts.events.wait(t, EventLost, 1)
	require.Eventually(t, func() bool { return cs[0].Err() != nil && cs[2].Err() != nil }, watchdog, time.Millisecond)
}

func TestFinalizedMember(t *testing.T) {
	const n = 3
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	require.NoError(t, barrierAll(cs))
	require.NoError(t, cs[2].Close())
	ts.events.wait(t, EventFinalized, 2)

	for _, c := range cs[:2] {
		_, err := c.Allgather([]byte("late"))
		var pl *core.PeerLostError
		require.ErrorAs(t, err, &pl)
		require.Equal(t, 2, pl.PE)
		require.Contains(t, pl.Reason, "finalized")
		require.NoError(t, c.Err(), "a finalized member is not lost")
	}
	require.Zero(t, ts.events.count(EventLost))

	_, err := cs[2].Allgather(nil)
	require.ErrorIs(t, err, core.ErrClosed)
	require.NoError(t, cs[2].Close(), "Close twice")
}

func TestFinalizeAfterEnteringCompletesRound(t *testing.T) {
	// A member that contributed and then closed still lets the round
	// complete for the others.
	const n = 2
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	pending := make(chan error, 1)
	go func() {
		_, err := cs[1].Allgather([]byte("one"))
		pending <- err
	}()
	// Wait until the store holds rank 1's contribution.
	require.Eventually(t, func() bool {
		ts.srv.mu.Lock()
		defer ts.srv.mu.Unlock()
		return ts.srv.ledger.inside[1]
	}, watchdog, time.Millisecond)
	require.NoError(t, cs[1].Close())
	require.ErrorIs(t, <-pending, core.ErrClosed)
	ts.events.wait(t, EventFinalized, 1)

	all, err := cs[0].Allgather([]byte("zero"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("zero"), []byte("one")}, all)
}

func TestCloseInterruptsPendingCollective(t *testing.T) {
	ts := startStore(t, 2, testSecret)
	cs := dialAll(t, ts.addr, 2, testSecret)
	pending := make(chan error, 1)
	go func() {
		_, err := cs[0].Allgather(nil)
		pending <- err
	}()
	require.NoError(t, cs[0].Close())
	require.ErrorIs(t, <-pending, core.ErrClosed)
}

func TestWrongSecretCannotJoin(t *testing.T) {
	const n = 2
	ts := startStore(t, n, testSecret)

	// A client with the wrong secret finds the store cannot prove the
	// right one and gives up at once, without retrying until the timeout.
	start := time.Now()
	_, err := Dial(ts.addr, 1, n, []byte("fedcba9876543210"), watchdog)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.Contains(t, err.Error(), "secret")
	require.Less(t, time.Since(start), watchdog/2)

	// A peer that knows no secret but forges a proof is refused.
	c, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer c.Close()
	var nc [nonceLen]byte
	_, err = c.Write(encodeHello(hello{rank: 1, size: n, nonce: nc}))
	require.NoError(t, err)
	var hdr [headerLen]byte
	typ, _, err := readFrame(c, &hdr, handshakeLimit)
	require.NoError(t, err)
	require.Equal(t, frameChallenge, typ)
	_, err = c.Write(encodeProof([macLen]byte{1, 2, 3}))
	require.NoError(t, err)
	typ, p, err := readFrame(c, &hdr, handshakeLimit)
	require.NoError(t, err)
	require.Equal(t, frameReject, typ)
	require.Contains(t, string(p), "authentication failed")
	_, _, err = readFrame(c, &hdr, handshakeLimit)
	require.ErrorIs(t, err, io.EOF, "the server disconnects a peer that failed")
	ts.events.waitFor(t, "rejection of the forged proof", func(e Event) bool {
		return e.Kind == EventRejected && e.Rank == 1 && strings.Contains(e.Reason, "authentication failed")
	})
	ts.events.waitFor(t, "rejection of the wrong secret", func(e Event) bool {
		return e.Kind == EventRejected && e.Rank == 1 && strings.Contains(e.Reason, "hung up")
	})

	// Rank 1 is still free: the real members join and work.
	cs := dialAll(t, ts.addr, n, testSecret)
	require.NoError(t, barrierAll(cs))
	require.Zero(t, ts.events.count(EventLost))
}

func TestEmptySecretIsUnauthenticatedButConsistent(t *testing.T) {
	ts := startStore(t, 2, nil)
	cs := dialAll(t, ts.addr, 2, nil)
	require.NoError(t, barrierAll(cs))
	// A member with a secret does not join a store without one.
	ts2 := startStore(t, 1, nil)
	_, err := Dial(ts2.addr, 0, 1, testSecret, watchdog)
	require.ErrorIs(t, err, core.ErrInvalid)
}

func TestRefusedMemberships(t *testing.T) {
	const n = 2
	ts := startStore(t, n, testSecret)
	first, err := Dial(ts.addr, 0, n, testSecret, watchdog)
	require.NoError(t, err)
	defer first.Close()

	_, err = Dial(ts.addr, 0, n, testSecret, watchdog)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.Contains(t, err.Error(), "rank 0 is already a member")

	_, err = Dial(ts.addr, 1, n+1, testSecret, watchdog)
	require.ErrorIs(t, err, core.ErrInvalid)
	require.Contains(t, err.Error(), "job size mismatch")

	_, err = Dial(ts.addr, 2, n, testSecret, watchdog)
	require.Error(t, err, "rank out of range is refused locally")

	second, err := Dial(ts.addr, 1, n, testSecret, watchdog)
	require.NoError(t, err)
	defer second.Close()
	require.NoError(t, barrierAll([]*Client{first, second}))
	require.Zero(t, ts.events.count(EventLost))
	ts.events.waitCount(t, EventRejected, 2)
}

// TestStrangersDoNotDisturbTheJob throws garbage at a store while a job
// runs on it: every stranger is disconnected, nobody is reported lost,
// and the job's collectives go on.
func TestStrangersDoNotDisturbTheJob(t *testing.T) {
	const n = 3
	ts := startStore(t, n, testSecret, func(s *Server) { s.HandshakeTimeout = 300 * time.Millisecond })
	cs := dialAll(t, ts.addr, n, testSecret)

	huge := make([]byte, headerLen)
	putHeader(huge, frameHello, 0)
	huge[4], huge[5], huge[6], huge[7] = 0xff, 0xff, 0xff, 0xff
	var nc [nonceLen]byte
	inputs := map[string][]byte{
		"http":           []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"random":         []byte("\x00\x01\x02\x03\xde\xad\xbe\xef garbage \xff\xfe"),
		"huge length":    huge,
		"unknown type":   {'g', 's', wireVersion, 200, 0, 0, 0, 0},
		"gather first":   appendGather(nil, 0, 0, []byte("sneak")),
		"short hello":    {'g', 's', wireVersion, frameHello, 0, 0, 0, 2, 1, 2},
		"hello then bye": append(encodeHello(hello{rank: 0, size: n, nonce: nc}), frame(frameBye)...),
		"silent":         nil, // says nothing: the handshake timeout ends it
	}
	var wg sync.WaitGroup
	for name, in := range inputs {
		wg.Go(func() {
			c, err := net.Dial("tcp", ts.addr)
			if !assertNoErr(t, err, name) {
				return
			}
			defer c.Close()
			c.Write(in)
			// The server must hang up (perhaps after a REJECT or a
			// CHALLENGE); reading to EOF proves it did.
			c.SetReadDeadline(time.Now().Add(watchdog))
			_, err = io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("%s: the server kept the connection open", name)
			}
		})
	}
	// Meanwhile the job runs.
	for range 50 {
		require.NoError(t, barrierAll(cs))
	}
	wg.Wait()
	require.NoError(t, barrierAll(cs))
	require.Zero(t, ts.events.count(EventLost))
	ts.events.waitCount(t, EventRejected, len(inputs))
	for _, c := range cs {
		require.NoError(t, c.Err())
	}
}

func assertNoErr(t *testing.T, err error, what string) bool {
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}

func TestMemberBreakingProtocolIsLost(t *testing.T) {
	const n = 2
	ts := startStore(t, n, testSecret)
	cs := dialAll(t, ts.addr, n, testSecret)
	// Rank 1 sends a collective out of order.
	_, err := cs[1].conn.Write(appendGather(nil, 5, 0, nil))
	require.NoError(t, err)
	e := ts.events.wait(t, EventLost, 1)
	require.Contains(t, e.Reason, "protocol error")
	_, err = cs[0].Allgather(nil)
	require.ErrorIs(t, err, core.ErrPeerLost)
}

func TestOversizeContributionFailsEveryMember(t *testing.T) {
	ts := startStore(t, 2, testSecret)
	cs := dialAll(t, ts.addr, 2, testSecret)
	big := make([]byte, MaxFrame)
	_, errs := allgatherAll(cs, func(r int) []byte {
		if r == 1 {
			return big
		}
		return []byte("small")
	})
	for _, err := range errs {
		require.ErrorIs(t, err, core.ErrInvalid)
		require.Contains(t, err.Error(), "PE 1 contributed more")
	}
	// Contributions that fit alone but not together also fail everywhere.
	half := make([]byte, MaxFrame/2+1)
	_, errs = allgatherAll(cs, func(int) []byte { return half })
	for _, err := range errs {
		require.ErrorIs(t, err, core.ErrInvalid)
		require.Contains(t, err.Error(), "add up to")
	}
	// The job goes on.
	require.NoError(t, barrierAll(cs))
}

func TestStoreGoneIsReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewServer(ln, 2, testSecret)
	srv.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	cs := dialAll(t, ln.Addr().String(), 2, testSecret)

	pending := make(chan error, 1)
	go func() {
		_, err := cs[0].Allgather(nil)
		pending <- err
	}()
	require.NoError(t, srv.Close())
	require.NoError(t, <-done)
	err = <-pending
	var pl *core.PeerLostError
	require.ErrorAs(t, err, &pl)
	require.Equal(t, -1, pl.PE)
	require.Contains(t, pl.Reason, "bootstrap store")
	require.Eventually(t, func() bool { return cs[1].Err() != nil }, watchdog, time.Millisecond)
}

func TestDialWaitsForTheStore(t *testing.T) {
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", port)
	type result struct {
		c   *Client
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := Dial(addr, 0, 1, testSecret, watchdog)
		got <- result{c, err}
	}()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := NewServer(ln, 1, testSecret)
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	r := <-got
	require.NoError(t, r.err)
	all, err := r.c.Allgather([]byte("solo"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("solo")}, all)
	require.NoError(t, r.c.Close())
	<-srv.Done()
	require.NoError(t, srv.Close())
	require.NoError(t, <-done)
}

func TestDialTimesOut(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", freePort(t))
	start := time.Now()
	_, err := Dial(addr, 0, 2, testSecret, 200*time.Millisecond)
	require.ErrorIs(t, err, core.ErrTimeout)
	require.Contains(t, err.Error(), addr)
	require.Less(t, time.Since(start), watchdog)
}

// freePort returns a port nothing listens on at the moment.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	return port
}

func TestServerDoneAfterEveryoneLeft(t *testing.T) {
	ts := startStore(t, 3, testSecret)
	cs := dialAll(t, ts.addr, 3, testSecret)
	require.NoError(t, cs[0].Close())
	require.NoError(t, cs[1].Close())
	select {
	case <-ts.srv.Done():
		t.Fatal("Done before the last member left")
	default:
	}
	crash(cs[2])
	select {
	case <-ts.srv.Done():
	case <-time.After(watchdog):
		t.Fatal("Done not closed after every member left")
	}
	// Events are delivered asynchronously, in order.
	ts.events.wait(t, EventLost, 2)
	require.Equal(t, 2, ts.events.count(EventFinalized))
	require.Equal(t, 1, ts.events.count(EventLost))
}

func TestDialRefusesAStranger(t *testing.T) {
	// Something else listens on the port: Dial gives up at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
		io.Copy(io.Discard, c)
		c.Close()
	}()
	start := time.Now()
	_, err = Dial(ln.Addr().String(), 0, 2, testSecret, watchdog)
	require.Error(t, err)
	require.Contains(t, err.Error(), "not a goshmem store")
	require.Less(t, time.Since(start), watchdog/2)
	ln.Close()
	<-done
}

// flush returns only once what was queued for a member has been written:
// over a pipe, whose writes wait for the reader, it waits until the member
// reads, and gives up at its bound when nobody does.
func TestFlushWaitsForQueuedFrames(t *testing.T) {
	srvEnd, memberEnd := net.Pipe()
	defer memberEnd.Close()
	s := &Server{}
	m := &member{conn: srvEnd, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	s.members = []*member{m}
	s.wg.Add(1)
	go s.writeLoop(m)
	defer func() { close(m.quit); srvEnd.Close(); s.wg.Wait() }()

	m.send([]byte("news"))
	flushed := make(chan struct{})
	go func() { s.flush(watchdog); close(flushed) }()
	select {
	case <-flushed:
		t.Fatal("flush returned before the member read what was queued")
	case <-time.After(20 * time.Millisecond):
	}
	buf := make([]byte, 4)
	_, err := io.ReadFull(memberEnd, buf)
	require.NoError(t, err)
	require.Equal(t, "news", string(buf))
	select {
	case <-flushed:
	case <-time.After(watchdog):
		t.Fatal("flush did not return once the frame was written")
	}

	// Nobody reads: flush gives up at its bound.
	m.send([]byte("more"))
	start := time.Now()
	s.flush(30 * time.Millisecond)
	require.Less(t, time.Since(start), watchdog)
	_, err = io.ReadFull(memberEnd, buf) // lets the writer finish
	require.NoError(t, err)
}
