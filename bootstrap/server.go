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
	ledger     *ledger   // who is a member, the rounds, and what a failure means
	aliveFrame []byte    // ALIVE announcing DeadAfter, once Serve has started
	conns      map[net.Conn]struct{}
	handshakes int
	done       chan struct{} // closed when every rank has finalized or been lost
	changed    chan struct{} // closed and replaced on every membership change
	events     []Event
	evWake     chan struct{}
	evQuit     chan struct{}
	wg         sync.WaitGroup
}

type member struct {
	rank   int
	conn   net.Conn
	remote string
	heard  atomic.Int64 // when a frame from it was last read, in Unix nanoseconds

	outMu   sync.Mutex
	out     [][]byte        // frames for the writer goroutine
	flushed []chan struct{} // closed once every frame queued before them is written
	wake    chan struct{}
	quit    chan struct{} // closed when the reader ends
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
		ledger:  newLedger(size),
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
		s.aliveFrame = encodeAlive(s.DeadAfter)
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
	var fx effects
	if !s.closed {
		s.ledger.left(&fx, m.rank, reason)
	}
	s.apply(&fx)
	s.mu.Unlock()
	close(m.quit)
	c.Close()
	for i := range fx.logged {
		fx.logged[i].Remote = remote // the connection's own end names it
	}
	s.logLost(fx.logged)
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
	claimed := claimedRank(h, s.size)
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
	if err := checkHello(h, s.size); err != nil {
		return reject("%w", err)
	}
	c.SetDeadline(time.Time{})
	tuneConn(c)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, claimed, errClosed
	}
	var fx effects
	if err := s.ledger.join(&fx, claimed); err != nil {
		return reject("%w", err)
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
	s.handshakes--
	s.wg.Add(1)
	go s.writeLoop(m)
	s.apply(&fx)
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
	var fx effects
	err := s.ledger.gather(&fx, m.rank, g)
	s.apply(&fx)
	return err
}

// reported acts on m's report that PE l.pe is lost (see ledger.reported).
func (s *Server) reported(m *member, l lost) {
	s.mu.Lock()
	var fx effects
	if !s.closed {
		s.ledger.reported(&fx, m.rank, int(l.pe), l.reason)
	}
	s.apply(&fx)
	s.mu.Unlock()
	s.logLost(fx.logged)
}

// Lose loses rank for a reason the caller saw and the store cannot (a
// launcher that sees its PE's process stopped): as for a member that
// reports a peer lost, everyone else is told, every collective fails, and
// the rank's connection is closed. A rank that has already left is not
// lost.
func (s *Server) Lose(rank int, reason string) {
	s.mu.Lock()
	var fx effects
	if !s.closed {
		s.ledger.loseAndClose(&fx, rank, reason, true)
	}
	s.apply(&fx)
	s.mu.Unlock()
	s.logLost(fx.logged)
}

// apply carries out what the ledger decided: it queues the frames, closes
// the connections, emits the events and closes Done once every rank has
// left. Called with s.mu held.
func (s *Server) apply(fx *effects) {
	for _, sd := range fx.sends {
		var f []byte
		switch sd.msg.kind {
		case msgLost:
			f = encodeLost(sd.msg.lost)
		case msgFail:
			f = encodeFail(sd.msg.fail)
		case msgResult:
			// One frame, shared read-only by every member's writer.
			f = encodeResult(sd.msg.seq, sd.msg.parts)
		case msgAlive:
			f = s.aliveFrame
		}
		for _, r := range sd.to {
			if m := s.members[r]; m != nil {
				m.send(f)
			}
		}
	}
	for _, r := range fx.closes {
		if m := s.members[r]; m != nil {
			m.conn.Close()
		}
	}
	if len(fx.events) > 0 {
		s.notifyChange()
	}
	for _, e := range fx.events {
		e.Remote = s.remoteOf(e.Rank)
		s.emit(e)
	}
	if fx.done {
		close(s.done)
	}
}

func (s *Server) remoteOf(rank int) string {
	if m := s.members[rank]; m != nil {
		return m.remote
	}
	return ""
}

// logLost logs the losses the ledger decided, outside the lock, with the
// member's address where the caller gave it. Info, not Warn: OnEvent's
// owner reports losses to the user.
func (s *Server) logLost(lost []Event) {
	for _, e := range lost {
		if e.Remote != "" {
			s.logger().Info("bootstrap: member lost", "rank", e.Rank, "remote", e.Remote, "reason", e.Reason)
		} else {
			s.logger().Info("bootstrap: member lost", "rank", e.Rank, "reason", e.Reason)
		}
	}
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
// DeadAfter (ledger.watch decides), until Close.
func (s *Server) watchAlive() {
	defer s.wg.Done()
	t := time.NewTicker(aliveEvery(s.DeadAfter))
	defer t.Stop()
	silence := make([]time.Duration, s.size)
	for {
		select {
		case <-t.C:
		case <-s.evQuit:
			return
		}
		now := time.Now()
		var fx effects
		s.mu.Lock()
		for rank, m := range s.members {
			if m != nil {
				silence[rank] = now.Sub(time.Unix(0, m.heard.Load()))
			}
		}
		s.ledger.watch(&fx, silence, s.DeadAfter)
		s.apply(&fx)
		s.mu.Unlock()
		s.logLost(fx.logged)
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
		active := s.ledger.active()
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
		missing := s.ledger.missing()
		changed := s.changed
		if len(missing) == 0 || s.closed {
			s.mu.Unlock()
			return nil
		}
		if expired {
			var fx effects
			missing = s.ledger.giveUp(&fx, reason)
			s.apply(&fx)
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
