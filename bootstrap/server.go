package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/auth"
)

// EventKind says what happened to a member of the job.
type EventKind int

const (
	// EventJoined: the rank proved the secret and joined.
	EventJoined EventKind = iota + 1
	// EventFinalized: the rank left cleanly (its Close).
	EventFinalized
	// EventLost: the rank's connection ended without a clean close, or it
	// broke the protocol. Every other member is told.
	EventLost
	// EventRejected: a connection failed the handshake or claimed a rank
	// that cannot join. It had no effect on the job.
	EventRejected
)

func (k EventKind) String() string {
	switch k {
	case EventJoined:
		return "joined"
	case EventFinalized:
		return "finalized"
	case EventLost:
		return "lost"
	case EventRejected:
		return "rejected"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event reports a change in the job's membership.
type Event struct {
	Kind   EventKind
	Rank   int    // the member; for EventRejected the rank claimed, or -1
	Remote string // the peer's address
	Reason string // for EventLost and EventRejected
}

// Server is the job's store: it authenticates members, runs their
// collectives and tells them when one is lost. See the package
// documentation for its lifetime.
type Server struct {
	// OnEvent, if set before Serve, receives every Event in the order they
	// happened, one call at a time, from a goroutine of the server. It
	// must return promptly and must not call Close.
	OnEvent func(Event)
	// Log receives warnings for rejected connections (the first few of
	// each minute, then a count) and an info line for every lost member;
	// nil means slog.Default().
	Log *slog.Logger
	// HandshakeTimeout bounds a connection's set-up; zero means 10s.
	HandshakeTimeout time.Duration
	// DeadAfter, if positive, is how long a member may send nothing
	// before it is lost. Every member sends ALIVE several times within
	// it, so silence means its process is stopped (SIGSTOP: its
	// connection stays open and the kernel answers TCP keepalives) or its
	// host unreachable. The store then sends ALIVE to every member too,
	// announcing DeadAfter, and the members lose the store after as long
	// a silence. Set before Serve.
	DeadAfter time.Duration

	ln     net.Listener
	size   int
	secret []byte

	// Anyone who reaches the port can make these warnings: a line each
	// would let them fill the log.
	busyLog, rejectLog core.LogLimit

	mu         sync.Mutex
	closed     bool
	serving    bool
	members    []*member // by rank; nil until the rank joins
	state      []memberState
	entered    []uint64 // collectives a finalized rank entered before leaving
	rounds     map[uint64]*round
	broken     *fail // the first loss: every later collective fails with it
	conns      map[net.Conn]struct{}
	handshakes int
	ended      int           // ranks finalized or lost
	done       chan struct{} // closed when ended == size
	changed    chan struct{} // closed and replaced on every membership change
	events     []Event
	evWake     chan struct{}
	evQuit     chan struct{}
	wg         sync.WaitGroup
}

type memberState uint8

const (
	statePending memberState = iota
	stateActive
	stateFinalized
	stateLost
)

type member struct {
	rank   int
	conn   net.Conn
	remote string
	seq    uint64       // the next collective this member will enter
	inside bool         // has contributed to a round that has not ended
	heard  atomic.Int64 // when a frame from it was last read, in Unix nanoseconds

	outMu   sync.Mutex
	out     [][]byte        // frames for the writer goroutine
	flushed []chan struct{} // closed once every frame queued before them is written
	wake    chan struct{}
	quit    chan struct{} // closed when the reader ends
}

type round struct {
	parts    [][]byte
	arrived  int
	oversize int // first member whose contribution was too large, or -1
}

// maxHandshakes bounds connections in set-up at once, so a flood of
// strangers costs the server a bounded number of goroutines.
const maxHandshakes = 256

// NewServer returns a store for a job of size members, serving on ln once
// Serve is called. An empty secret makes the store unauthenticated: anyone
// who can reach ln can join as a missing rank.
func NewServer(ln net.Listener, size int, secret []byte) *Server {
	if size < 1 {
		panic(fmt.Sprintf("bootstrap: NewServer with size %d: a job needs at least one PE", size))
	}
	return &Server{
		ln:      ln,
		size:    size,
		secret:  slices.Clone(secret),
		members: make([]*member, size),
		state:   make([]memberState, size),
		entered: make([]uint64, size),
		rounds:  map[uint64]*round{},
		conns:   map[net.Conn]struct{}{},
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		evWake:  make(chan struct{}, 1),
		evQuit:  make(chan struct{}),
	}
}

// Addr is the address the store listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Size is the number of members the store expects.
func (s *Server) Size() int { return s.size }

// Done is closed once every rank has finalized or been lost.
func (s *Server) Done() <-chan struct{} { return s.done }

// Serve accepts connections until Close; it then returns nil. It returns an
// error if the listener fails for another reason.
func (s *Server) Serve() error {
	s.mu.Lock()
	if s.serving || s.closed {
		s.mu.Unlock()
		return fmt.Errorf("bootstrap: Serve called twice or after Close: %w", errClosed)
	}
	s.serving = true
	s.wg.Add(1)
	go s.deliverEvents()
	if s.DeadAfter > 0 {
		s.wg.Add(1)
		go s.watchAlive()
	}
	s.mu.Unlock()

	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			if isTemporaryAccept(err) {
				// Out of file descriptors and the like: wait, do not spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("bootstrap: accept: %w", err)
		}
		backoff = 0
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			c.Close()
			continue
		case s.handshakes >= maxHandshakes:
			s.mu.Unlock()
			s.busyLog.Warn(s.logger(), "bootstrap: too many connections in set-up; dropping one",
				"remote", c.RemoteAddr().String())
			c.Close()
			continue
		}
		s.handshakes++
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(c)
	}
}

// isTemporaryAccept reports errors after which accepting may succeed later.
func isTemporaryAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Close stops the store: it stops listening, drops every connection
// without reporting anyone lost, and returns once every goroutine of the
// server has ended and every queued event has been delivered.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	serving := s.serving
	s.mu.Unlock()

	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	for _, c := range conns {
		c.Close()
	}
	if serving {
		close(s.evQuit)
	}
	s.wg.Wait()
	s.busyLog.Flush(s.logger())
	s.rejectLog.Flush(s.logger())
	return err
}

func (s *Server) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// handle runs one connection: the handshake, then the member's frames.
func (s *Server) handle(c net.Conn) {
	defer s.wg.Done()
	remote := c.RemoteAddr().String()
	m, claimed, err := s.handshake(c, remote)
	if err != nil {
		s.mu.Lock()
		s.handshakes--
		delete(s.conns, c)
		closed := s.closed
		if !closed {
			s.emit(Event{Kind: EventRejected, Rank: claimed, Remote: remote, Reason: err.Error()})
		}
		s.mu.Unlock()
		c.Close()
		if !closed {
			s.rejectLog.Warn(s.logger(), "bootstrap: rejected connection", "remote", remote, "rank", claimed, "err", err)
		}
		return
	}

	reason := s.serveMember(m)

	s.mu.Lock()
	delete(s.conns, c)
	// A member another reported lost has been counted out already.
	counted := !s.closed && s.state[m.rank] == stateActive
	if counted {
		if reason == "" {
			s.finalize(m)
		} else {
			s.lose(m.rank, reason)
		}
	}
	s.mu.Unlock()
	close(m.quit)
	c.Close()
	if reason != "" && counted {
		// Info, not Warn: OnEvent's owner reports losses to the user.
		s.logger().Info("bootstrap: member lost", "rank", m.rank, "remote", remote, "reason", reason)
	}
}

// handshake authenticates c and registers it as a member. On failure it
// returns the rank claimed (-1 if none) and the reason, having told an
// authenticated peer why.
func (s *Server) handshake(c net.Conn, remote string) (*member, int, error) {
	timeout := s.HandshakeTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	c.SetDeadline(time.Now().Add(timeout))
	var hdr [headerLen]byte
	typ, p, err := readFrame(c, &hdr, handshakeLimit)
	if err != nil {
		return nil, -1, fmt.Errorf("reading HELLO: %w", err)
	}
	if typ != frameHello {
		return nil, -1, wireErr("first frame is %s, want HELLO", frameName(typ))
	}
	h, err := decodeHello(p)
	if err != nil {
		return nil, -1, err
	}
	claimed := -1
	if uint64(h.rank) < uint64(s.size) {
		claimed = int(h.rank)
	}
	a, err := auth.Bootstrap.Accept(s.secret, p)
	if err != nil {
		return nil, claimed, err
	}
	if _, err := c.Write(encodeChallenge(a.Challenge())); err != nil {
		return nil, claimed, fmt.Errorf("writing CHALLENGE: %w", err)
	}
	typ, p, err = readFrame(c, &hdr, handshakeLimit)
	if errors.Is(err, io.EOF) {
		return nil, claimed, errors.New("the peer hung up after CHALLENGE: it does not know the job secret, or gave up")
	}
	if err != nil {
		return nil, claimed, fmt.Errorf("reading PROOF: %w", err)
	}
	if typ != frameProof {
		return nil, claimed, wireErr("got %s, want PROOF", frameName(typ))
	}
	mac, err := decodeProof(p)
	if err != nil {
		return nil, claimed, err
	}
	if a.Verify(&mac) != nil {
		c.Write(encodeReject("authentication failed: the job secret does not match"))
		return nil, claimed, errors.New("authentication failed: the peer does not know the job secret")
	}

	// Authenticated: from here on the peer hears why it cannot join.
	reject := func(format string, a ...any) (*member, int, error) {
		err := fmt.Errorf(format, a...)
		c.Write(encodeReject(err.Error()))
		return nil, claimed, err
	}
	if uint64(h.size) != uint64(s.size) {
		return reject("job size mismatch: the store serves %d PEs, the peer expects %d", s.size, h.size)
	}
	if claimed < 0 {
		return reject("rank %d out of range: the job has PEs 0..%d", h.rank, s.size-1)
	}
	c.SetDeadline(time.Time{})
	tuneConn(c)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, claimed, errClosed
	}
	if st := s.state[claimed]; st != statePending {
		what := map[memberState]string{stateActive: "is already a member",
			stateFinalized: "has already finalized", stateLost: "was lost"}[st]
		return reject("rank %d %s; a rank cannot join twice", claimed, what)
	}
	m := &member{
		rank:   claimed,
		conn:   c,
		remote: remote,
		out:    [][]byte{frame(frameWelcome)},
		wake:   make(chan struct{}, 1),
		quit:   make(chan struct{}),
	}
	if s.DeadAfter > 0 {
		m.out = append(m.out, encodeAlive(s.DeadAfter))
	}
	m.heard.Store(time.Now().UnixNano())
	m.wake <- struct{}{}
	s.members[claimed] = m
	s.state[claimed] = stateActive
	s.handshakes--
	// A member joining after another was lost hears of it at once.
	if s.broken != nil {
		m.out = append(m.out, encodeLost(lost{pe: uint32(s.broken.pe), reason: s.broken.reason}))
	}
	s.wg.Add(1)
	go s.writeLoop(m)
	s.notifyChange()
	s.emit(Event{Kind: EventJoined, Rank: claimed, Remote: remote})
	return m, claimed, nil
}

// serveMember reads a member's frames until it leaves. It returns "" for a
// clean close and the reason otherwise.
func (s *Server) serveMember(m *member) string {
	br := bufio.NewReader(m.conn)
	var hdr [headerLen]byte
	for {
		typ, p, err := readFrame(br, &hdr, MaxFrame)
		if err == nil {
			m.heard.Store(time.Now().UnixNano())
		}
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				return "connection closed without finalizing (the process exited or crashed)"
			case errors.Is(err, errWire):
				return "protocol error: " + err.Error()
			}
			return "connection broken: " + err.Error()
		}
		switch typ {
		case frameGather:
			g, err := decodeGather(p)
			if err != nil {
				return "protocol error: " + err.Error()
			}
			if err := s.gather(m, g); err != nil {
				return "protocol error: " + err.Error()
			}
		case frameBye:
			if err := decodeEmpty(typ, p); err != nil {
				return "protocol error: " + err.Error()
			}
			return ""
		case frameLost:
			l, err := decodeLost(p, s.size)
			if err != nil {
				return "protocol error: " + err.Error()
			}
			s.reported(m, l)
		case frameAlive:
			if _, err := decodeAlive(p); err != nil {
				return "protocol error: " + err.Error()
			}
		default:
			return fmt.Sprintf("protocol error: unexpected %s frame from a member", frameName(typ))
		}
	}
}

// gather records m's contribution to its next collective and ends the
// round if it was the last one missing.
func (s *Server) gather(m *member, g gather) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.seq != m.seq {
		return fmt.Errorf("collective %d out of order: expected %d", g.seq, m.seq)
	}
	if m.inside {
		return fmt.Errorf("collective %d entered while %d is still running", g.seq, g.seq-1)
	}
	m.seq++
	if s.broken != nil {
		m.send(encodeFail(fail{seq: g.seq, pe: s.broken.pe, kind: failLost, reason: s.broken.reason}))
		return nil
	}
	for pe, st := range s.state {
		if st == stateFinalized && s.entered[pe] <= g.seq {
			m.send(encodeFail(finalizedFail(g.seq, pe)))
			return nil
		}
	}
	r := s.rounds[g.seq]
	if r == nil {
		r = &round{parts: make([][]byte, s.size), oversize: -1}
		s.rounds[g.seq] = r
	}
	r.parts[m.rank] = g.data
	r.arrived++
	m.inside = true
	if g.flags&gatherOversize != 0 && r.oversize < 0 {
		r.oversize = m.rank
	}
	if r.arrived < s.size {
		return nil
	}
	delete(s.rounds, g.seq)
	var out []byte
	switch {
	case r.oversize >= 0:
		out = encodeFail(fail{seq: g.seq, pe: int32(r.oversize), kind: failTooLarge,
			reason: fmt.Sprintf("PE %d contributed more than the %d bytes a frame can carry", r.oversize, MaxFrame)})
	case resultLen(r.parts) > MaxFrame:
		out = encodeFail(fail{seq: g.seq, pe: -1, kind: failTooLarge,
			reason: fmt.Sprintf("the contributions add up to %d bytes, more than the %d a frame can carry",
				resultLen(r.parts), MaxFrame)})
	default:
		// One frame, shared read-only by every member's writer.
		out = encodeResult(g.seq, r.parts)
	}
	for pe, mm := range s.members {
		if mm == nil {
			continue // cannot happen: every rank contributed
		}
		mm.inside = false
		if s.state[pe] == stateActive {
			mm.send(out)
		}
	}
	return nil
}

func finalizedFail(seq uint64, pe int) fail {
	return fail{seq: seq, pe: int32(pe), kind: failFinalized,
		reason: "left the job (finalized) before this collective"}
}

// finalize records m's clean departure. Rounds m already contributed to can
// still complete; those it never entered fail. Called with s.mu held.
func (s *Server) finalize(m *member) {
	s.state[m.rank] = stateFinalized
	s.entered[m.rank] = m.seq
	for seq := range s.rounds {
		if seq < m.seq {
			continue
		}
		f := encodeFail(finalizedFail(seq, m.rank))
		s.failRound(seq, f)
	}
	s.end(Event{Kind: EventFinalized, Rank: m.rank, Remote: m.remote})
}

// reported acts on m's report that PE l.pe is lost. Its transport saw
// what the store cannot (a stopped process keeps its connection open), so
// the PE is lost as if its connection had ended: everyone is told, every
// collective fails, and its connection is closed, so that it too learns,
// should it run again. A PE that has already left is not lost.
func (s *Server) reported(m *member, l lost) {
	pe := int(l.pe)
	reason := fmt.Sprintf("PE %d reports it lost: %s", m.rank, l.reason)
	s.mu.Lock()
	if s.closed || (s.state[pe] != stateActive && s.state[pe] != statePending) {
		s.mu.Unlock()
		return
	}
	s.lose(pe, reason)
	if mm := s.members[pe]; mm != nil && pe != m.rank {
		mm.conn.Close()
	}
	s.mu.Unlock()
	s.logger().Info("bootstrap: member lost", "rank", pe, "reason", reason)
}

// Lose loses rank for a reason the caller saw and the store cannot (a
// launcher that sees its PE's process stopped): as for a member that
// reports a peer lost, everyone else is told, every collective fails, and
// the rank's connection is closed. A rank that has already left is not
// lost.
func (s *Server) Lose(rank int, reason string) {
	if rank < 0 || rank >= s.size {
		return
	}
	s.mu.Lock()
	if s.closed || (s.state[rank] != stateActive && s.state[rank] != statePending) {
		s.mu.Unlock()
		return
	}
	s.lose(rank, reason)
	if mm := s.members[rank]; mm != nil {
		mm.conn.Close()
	}
	s.mu.Unlock()
	s.logger().Info("bootstrap: member lost", "rank", rank, "reason", reason)
}

// lose records that rank vanished: everyone else is told, and every
// running and later collective fails. Called with s.mu held.
func (s *Server) lose(rank int, reason string) {
	s.state[rank] = stateLost
	if s.broken == nil {
		s.broken = &fail{pe: int32(rank), kind: failLost, reason: reason}
	}
	l := encodeLost(lost{pe: uint32(rank), reason: reason})
	for pe, mm := range s.members {
		if mm != nil && pe != rank && s.state[pe] == stateActive {
			mm.send(l)
		}
	}
	for seq := range s.rounds {
		s.failRound(seq, encodeFail(fail{seq: seq, pe: s.broken.pe, kind: failLost, reason: s.broken.reason}))
	}
	var remote string
	if m := s.members[rank]; m != nil {
		remote = m.remote
	}
	s.end(Event{Kind: EventLost, Rank: rank, Remote: remote, Reason: reason})
}

// failRound tells every member waiting in round seq that it failed.
func (s *Server) failRound(seq uint64, f []byte) {
	delete(s.rounds, seq)
	for pe, mm := range s.members {
		if mm == nil || !mm.inside || mm.seq != seq+1 {
			continue
		}
		mm.inside = false
		if s.state[pe] == stateActive {
			mm.send(f)
		}
	}
}

// end counts a rank out and wakes whoever watches membership.
func (s *Server) end(e Event) {
	s.ended++
	if s.ended == s.size {
		close(s.done)
	}
	s.notifyChange()
	s.emit(e)
}

// notifyChange wakes waitDrained. Called with s.mu held.
func (s *Server) notifyChange() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// aliveEvery is how often a member, and a store that watches its members,
// sends ALIVE: a few times within the dead-after, at most once a second.
func aliveEvery(deadAfter time.Duration) time.Duration {
	return min(time.Second, max(deadAfter/4, time.Millisecond))
}

// watchAlive sends ALIVE to every member and loses those silent for
// DeadAfter, until Close.
func (s *Server) watchAlive() {
	defer s.wg.Done()
	t := time.NewTicker(aliveEvery(s.DeadAfter))
	defer t.Stop()
	alive := encodeAlive(s.DeadAfter)
	type loss struct {
		rank   int
		reason string
	}
	var lost []loss
	for {
		select {
		case <-t.C:
		case <-s.evQuit:
			return
		}
		now := time.Now()
		s.mu.Lock()
		for rank, m := range s.members {
			if m == nil || s.state[rank] != stateActive {
				continue
			}
			silent := now.Sub(time.Unix(0, m.heard.Load()))
			if silent < s.DeadAfter {
				m.send(alive)
				continue
			}
			reason := fmt.Sprintf("sent the store nothing for %v (its process is stopped or its host unreachable)",
				silent.Round(time.Millisecond))
			s.lose(rank, reason)
			m.conn.Close()
			lost = append(lost, loss{rank, reason})
		}
		s.mu.Unlock()
		for _, l := range lost {
			s.logger().Info("bootstrap: member lost", "rank", l.rank, "reason", l.reason)
		}
		lost = lost[:0]
	}
}

// send queues a frame for the member's writer. Called with s.mu held; never
// blocks.
func (m *member) send(f []byte) {
	m.outMu.Lock()
	m.out = append(m.out, f)
	m.outMu.Unlock()
	m.kick()
}

// flushMark returns a channel closed once every frame queued so far has been
// written to the member's connection.
func (m *member) flushMark() <-chan struct{} {
	f := make(chan struct{})
	m.outMu.Lock()
	m.flushed = append(m.flushed, f)
	m.outMu.Unlock()
	m.kick()
	return f
}

// kick wakes the member's writer, if it is not already due to run.
func (m *member) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// flush waits, for at most d, until every frame queued so far for a member
// whose connection still stands has been written to it. A store that gives
// up tells the members that did join why before it closes their connections;
// without the wait, Close could cut a connection ahead of that news, and the
// member would hear only that the store went away.
func (s *Server) flush(d time.Duration) {
	type mark struct {
		done <-chan struct{}
		quit <-chan struct{}
	}
	s.mu.Lock()
	var marks []mark
	for _, m := range s.members {
		if m != nil {
			marks = append(marks, mark{m.flushMark(), m.quit})
		}
	}
	s.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, mk := range marks {
		select {
		case <-mk.done:
		case <-mk.quit: // its reader ended: nothing more reaches it
		case <-timer.C:
			return
		}
	}
}

// writeLoop owns writes to a member's connection, so a slow reader delays
// only itself and frames never interleave.
func (s *Server) writeLoop(m *member) {
	defer s.wg.Done()
	var batch [][]byte
	for {
		select {
		case <-m.wake:
		case <-m.quit:
			return
		}
		m.outMu.Lock()
		batch = append(batch[:0], m.out...)
		clear(m.out)
		m.out = m.out[:0]
		flushed := m.flushed
		m.flushed = nil
		m.outMu.Unlock()
		bufs := net.Buffers(batch)
		_, err := bufs.WriteTo(m.conn)
		clear(batch)
		if err != nil {
			// The reader sees the broken connection and reports it.
			m.conn.Close()
			return
		}
		for _, f := range flushed {
			close(f)
		}
	}
}

// emit queues an event for OnEvent. Called with s.mu held.
func (s *Server) emit(e Event) {
	if !s.serving {
		return
	}
	s.events = append(s.events, e)
	select {
	case s.evWake <- struct{}{}:
	default:
	}
}

// deliverEvents calls OnEvent outside the lock, in order.
func (s *Server) deliverEvents() {
	defer s.wg.Done()
	for {
		quit := false
		select {
		case <-s.evWake:
		case <-s.evQuit:
			quit = true
		}
		s.mu.Lock()
		evs := s.events
		s.events = nil
		s.mu.Unlock()
		if s.OnEvent != nil {
			for _, e := range evs {
				s.OnEvent(e)
			}
		}
		if quit {
			// Close waits for the connection goroutines only after this
			// one; events they queue later are dropped, as Close drops
			// connections without reporting anyone.
			return
		}
	}
}

// waitDrained returns once every rank has finalized or been lost, or once
// no member is active and no new one has joined for linger (ranks that never
// joined are then given up).
func (s *Server) waitDrained(linger time.Duration) {
	for {
		s.mu.Lock()
		changed := s.changed
		active := 0
		for _, st := range s.state {
			if st == stateActive {
				active++
			}
		}
		s.mu.Unlock()
		var timer *time.Timer
		var timeout <-chan time.Time
		if active == 0 {
			timer = time.NewTimer(linger)
			timeout = timer.C
		}
		select {
		case <-s.done:
			return
		case <-changed:
		case <-timeout:
			return
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

var errClosed = errors.New("bootstrap: store closed")

// awaitJoined waits until every rank has joined, or until d has passed;
// then every rank still missing is lost (so the members that did join
// hear who never came and why) and returned. reason says where they were
// told to come.
func (s *Server) awaitJoined(d time.Duration, reason string) []int {
	timer := time.NewTimer(d)
	defer timer.Stop()
	expired := false
	for {
		s.mu.Lock()
		var missing []int
		for r, st := range s.state {
			if st == statePending {
				missing = append(missing, r)
			}
		}
		changed := s.changed
		if len(missing) == 0 || s.closed {
			s.mu.Unlock()
			return nil
		}
		if expired {
			for _, r := range missing {
				s.lose(r, reason)
			}
			s.mu.Unlock()
			return missing
		}
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			expired = true // look once more under the lock
		}
	}
}
