package tcp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// Adaptive polling. A reader that sleeps in the runtime's poller is woken
// through the kernel's wake-up of an idle thread, which on an idle CPU
// costs more than a small operation's whole round trip, twice per round
// trip; a reader that polls its socket for the next frame, yielding the
// CPU to other threads between looks (sched_yield), takes it at once. So a
// reader polls for a budget that adapts, like an adaptive mutex's
// spinning: it grows while polls succeed, halves while they fail, and
// grows again from zero after a sleep that a frame soon ended. It is zero
// with POLL=0 and when this host runs more PEs of the job than it has
// CPUs.
//
// The reader goroutine polls between its turns with the receive token;
// an issuer waiting for a reply or for quiet polls only while it holds
// the token itself (token.go), for at most assistPoll, and otherwise
// sleeps at once: the reader that wakes it lets it run on its own thread
// (runtime.Gosched) before it looks again. Gosched is not the yield
// between looks: it wakes a thread for an idle P each time, and so does
// waking the issuer, which is why, when the PEs' runtime processors
// (GOMAXPROCS) together outnumber the CPUs, those threads compete with
// the pollers: there nobody polls unless the host's CPUs have room
// (cpuroom.go).
const (
	// maxPoll is the largest POLL setting.
	maxPoll = 10 * time.Millisecond
	// pollMin is the smallest budget worth polling: a budget that halves
	// below it becomes zero.
	pollMin = int64(2 * time.Microsecond)
	// pollYieldGap is how long a poll that has waited past its due time
	// looks at its socket between two yields of the CPU to other threads
	// (poll.next).
	pollYieldGap = int64(4 * time.Microsecond)
	// aloneYields is how many yields in a row must find no other thread
	// waiting for this CPU before a poll stops yielding at every look.
	aloneYields = 64
	// yieldRan is how long a yield that let another thread run takes at
	// least: one that returns sooner found this CPU to itself (a raw
	// sched_yield then costs well under a microsecond).
	yieldRan = int64(3 * time.Microsecond)
	// lookGap is how long apart two looks are at most when nothing took
	// the poller's CPU between them.
	lookGap = int64(20 * time.Microsecond)
)

// poll is one bounded poll of a budget (how long to poll before sleeping,
// in nanoseconds), begun by startPoll.
type poll struct {
	budget       *int64
	start, until int64
	limit        int64
	yielded      int64 // when next last yielded
	// due is when what the poll waits for is late: until then, where the
	// host's CPUs have room, next does not yield (expect).
	due int64
	// gated says that the PEs' runtime processors outnumber the CPUs
	// (domain.pollGated): there nothing is ever due later than at once.
	gated bool
	// alone, where not nil, counts the poller's yields in a row that
	// found its CPU to itself, across its polls (share); looked is when
	// next last looked.
	alone  *int32
	looked int64
}

// startPoll begins a poll of budget under d's POLL limit: until is start
// itself when the budget is zero or d is gated and the host's CPUs have
// no room.
func startPoll(d *domain, budget *int64) poll {
	now := nanotime()
	p := poll{budget: budget, start: now, until: now, limit: d.pollMax.Load(), yielded: now, due: now, looked: now}
	// pollGated is set before pollMax is stored: read it only after.
	if p.limit > 0 {
		p.gated = d.pollGated
		if !p.gated || cpuRoom(now) {
			p.until += min(*budget, p.limit)
		}
	}
	return p
}

// on says whether the poll has a budget at all.
func (p *poll) on() bool { return p.until > p.start }

// expect says that what the poll waits for usually comes usual
// nanoseconds after it began (learn): it is due by twice that. Where the
// PEs' runtime processors outnumber the CPUs it is due at once: there a
// PE's reader goroutine and an issuer may poll at the same time on two
// threads, and pollers that never yield would keep the peers' pollers
// from the CPUs.
func (p *poll) expect(usual int64) {
	if !p.gated {
		p.due = p.start + 2*usual
	}
}

// share says where the poller counts its yields that found its CPU to
// itself (next). Two threads that take turns on one CPU, each woken by the
// other's write, stay there while the other CPU idles: the kernel runs a
// thread that a socket's data wakes on the writer's CPU, and the load
// balancer moves neither, since only one of them ever runs. A poller that
// does not yield keeps its partner from the CPU until the poll gives up,
// and the poll, missing, halves its budget and parks, so the next round
// trip wakes it on its partner's CPU again. So until its yields have
// shown its CPU to be its own, a poll yields at every look: the two then
// both stay runnable, the load balancer gives each a CPU, and the yields
// come back at once.
func (p *poll) share(alone *int32) { p.alone = alone }

// learn folds took, how long a wait that ended in time took, into usual,
// a running average over about eight waits.
func learn(usual *int64, took int64) {
	if *usual == 0 {
		*usual = took
		return
	}
	*usual += (took - *usual) / 8
}

// next yields the CPU to other threads where that may help, then says
// whether the budget has time left. It does not yield to goroutines
// (runtime.Gosched): that wakes another thread for an idle P each time.
//
// Where the host's CPUs have room (cpuRoom), nothing is queued behind the
// poller that the answer waits for, and a yield only delays the look
// that sees it: a look costs a read, a yield as much again or, when it
// lets another thread run, a whole slice of that thread's. So until the
// answer is due it does not yield at all, as a C program polling its
// socket does not, and once it is late, once every pollYieldGap. Where
// the CPUs have no room, it yields at every look: there the thread that
// the answer waits for may be queued behind it.
//
// Until the poller's yields have shown that its CPU is its own (share),
// it yields at every look, and again once a yield let another thread run
// or something took its CPU between two looks.
func (p *poll) next() bool {
	now := nanotime()
	crowded := false
	if p.alone != nil {
		if now-p.looked > lookGap {
			*p.alone = 0
		}
		crowded = *p.alone < aloneYields
	}
	if crowded || !cpuRoom(now) || (now >= p.due && now-p.yielded >= pollYieldGap) {
		yield()
		after := nanotime()
		if p.alone != nil {
			if after-now >= yieldRan {
				*p.alone = 0
			} else if *p.alone < aloneYields {
				*p.alone++
			}
		}
		now = after
		p.yielded = now
	}
	p.looked = now
	return now < p.until
}

// hit records that what the poll waited for came: the budget grows to
// twice what it took, or doubles.
func (p *poll) hit() {
	took := nanotime() - p.start
	*p.budget = min(p.limit, max(2**p.budget, 2*took))
}

// miss records that the poll ran out: the budget halves.
func (p *poll) miss() {
	if *p.budget /= 2; *p.budget < pollMin {
		*p.budget = 0
	}
}

// slept records that, after the poll, the waiter slept until what it
// waited for came: if it came soon after it slept, polling would have
// caught it, and a budget of zero grows again.
func (p *poll) slept() {
	if p.limit == 0 || *p.budget != 0 {
		return
	}
	if waited := nanotime() - p.start; waited < p.limit/2 {
		*p.budget = max(pollMin, 2*waited)
	}
}

// sockReader is what a connection's buffered reader reads from: the
// socket, for the holder of the receive token (token.go).
type sockReader struct {
	nc     net.Conn
	raw    syscall.RawConn // nil where nc is not a socket
	budget int64           // the reader goroutine's: nanoseconds to poll before it parks
	usual  int64           // the reader goroutine's: how long its polls usually wait for a frame (learn)
	alone  int32           // the reader goroutine's: its yields in a row that found its CPU to itself (share)
	// assistAlone is alone for the issuers that poll holding the token.
	assistAlone int32
	// readied says that a holder of the token may have woken a goroutine
	// of this process (an issuer's reply or ack, a waiter's memory): the
	// reader goroutine lets it run before it polls.
	readied bool
	// edge says that the holder is at a frame's boundary and must not
	// wait: a socket found empty reads as errEmpty.
	edge bool

	// The non-blocking read under way, with a method value made once so
	// that a read allocates nothing.
	rawRead  func(fd uintptr)
	waitRead func(fd uintptr) bool // readWaiting
	peek     func(fd uintptr) bool
	looked   bool // the reader goroutine's: peek looked at the socket
	// settle, where the socket is outside the runtime's poller (sock),
	// takes it out of the set its sleepers wait in (polled).
	settle func()
	bulk   bool // the last read moved more than rawBulk (readRaw)

	buf []byte
	n   int
	err error
}

// errEmpty is what sockReader reads at a frame's boundary from an empty
// socket.
var errEmpty = errors.New("tcp: socket empty")

// Read implements io.Reader. Within a frame it waits for the socket; at
// a boundary (edge) it does not.
func (s *sockReader) Read(p []byte) (int, error) {
	if s.raw == nil {
		return s.nc.Read(p)
	}
	if n, err, ok := s.try(p); ok {
		return n, err
	}
	if s.edge {
		return 0, errEmpty
	}
	// Within a frame: wait in the runtime's poller, reading with raw
	// system calls as try does (raw.go).
	s.buf, s.n, s.err = p, 0, nil
	rerr := s.raw.Read(s.waitRead)
	n, err := s.n, s.err
	s.buf = nil
	if err == nil {
		err = rerr
	}
	return n, err
}

// readWaiting is Read's condition within a frame: one read into s.buf,
// done once it moved data or found the stream's end or an error.
func (s *sockReader) readWaiting(fd uintptr) bool {
	s.readRaw(fd)
	return s.n > 0 || s.err != nil
}

// readDirect reads all of p from the socket within a frame: a large
// payload, straight to where it goes (frameReader). Its reads go through
// the runtime's hooks only where what is left of it is more than
// readerRefs (readRaw).
func (s *sockReader) readDirect(p []byte) error {
	var err error
	for len(p) > 0 && err == nil {
		s.bulk = len(p) > readerRefs
		var n int
		n, err = s.Read(p)
		p = p[n:]
	}
	s.bulk = false
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// frameReader is what the holder of the receive token reads frames from
// (rxState.frame): the buffered socket, whose payloads of more than
// injectSize bytes (large puts and replies) it reads past the buffer
// (readPayload).
type frameReader struct {
	*bufio.Reader
	sock *sockReader
}

// readPayload reads p, a frame's payload: what the buffer holds of it
// is copied, and the rest of a large one is read from the socket
// straight into p, saving the copy out of the buffer.
func (f *frameReader) readPayload(p []byte) error {
	if len(p) <= injectSize || f.sock.raw == nil {
		_, err := io.ReadFull(f.Reader, p)
		return err
	}
	if n := min(f.Buffered(), len(p)); n > 0 {
		k, _ := f.Read(p[:n])
		p = p[k:]
	}
	if len(p) == 0 {
		return nil
	}
	return f.sock.readDirect(p)
}

// try reads what the socket holds without waiting; ok says whether it
// returned data, the end of the stream or an error rather than finding
// the socket empty. It does not take the socket's read lock, which the
// reader goroutine may hold while it waits for the socket (park).
func (s *sockReader) try(p []byte) (n int, err error, ok bool) {
	s.buf, s.n, s.err = p, 0, nil
	rerr := s.raw.Control(s.rawRead)
	n, err = s.n, s.err
	s.buf = nil
	if err == nil {
		err = rerr
	}
	return n, err, n > 0 || err != nil
}

// polled says that a poll found what it waited for: polls pay off on this
// socket, so it leaves the set its sleepers wait in, where segments that
// come while it is polled would run the set's callback (sock). A socket
// whose polls miss stays there: its reader sleeps after every poll, and
// taking it out and back would cost two system calls each time.
func (s *sockReader) polled() {
	if s.settle != nil {
		s.settle()
	}
}
