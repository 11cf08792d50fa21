package tcp

import (
	"runtime"
	"time"
)

// The receive token. Whoever holds c.rd.tok reads the socket and applies
// the peer's frames (serve): the reader goroutine, or an issuer waiting
// for its reply or its quiet's acknowledgement, which so reads its own
// reply instead of being woken by the reader (a goroutine hand-off, a
// scheduling round where GOMAXPROCS is 1). A holder applies every frame
// it reads exactly as the reader does (it answers requests, completes
// others' replies and acks) and never waits to write: what the socket
// does not take at once is left to the writer goroutine. A holder stops
// only at a frame's boundary with nothing buffered, so the next holder
// starts there.
//
// The reader goroutine holds the token only while it reads. Before it
// parks it lets the token go and waits for the socket to become readable
// without reading it (park), and re-checks the socket after the runtime's
// poller is armed, so data an issuer leaves unread when its budget ends,
// or that comes after, always wakes it: no frame is left unread.

// assistPoll bounds how long an issuer polls the socket for its reply
// before it sleeps; the POLL setting bounds it too.
const assistPoll = int64(30 * time.Microsecond)

// read is the reader goroutine's loop: it takes the token, applies what
// the socket holds, polls for its adaptive budget, then parks until the
// socket is readable, until the stream ends.
func (c *conn) read() {
	for {
		// Parking next (no poll budget), serve leaves the socket's
		// last look to the park: one empty read fewer per wake-up.
		// Without a raw socket there is no park: serve reads on.
		next := startPoll(c.d, &c.rd.sock.budget)
		lazy := c.rd.sock.raw != nil && !next.on()
		c.rd.tok.Lock()
		c.rd.lazy = lazy
		c.serve(nil)
		c.rd.lazy = false
		end, readied := c.rd.end, c.rd.sock.readied
		c.rd.sock.readied = false
		c.rd.tok.Unlock()
		if end || c.rd.sock.raw == nil {
			// Without a raw socket serve reads until the stream ends.
			return
		}
		pl := startPoll(c.d, &c.rd.sock.budget)
		if pl.on() {
			if readied {
				// Let the goroutines it woke run on this thread first.
				runtime.Gosched()
			}
			if c.pollTurns(&pl) {
				continue
			}
		}
		c.rd.sock.looked = false
		err := c.rd.sock.raw.Read(c.rd.sock.peek)
		pl.slept()
		// Woken by a frame, the reader's thread may run on the CPU
		// of the thread that wrote it (share).
		c.rd.sock.alone = 0
		if err != nil {
			c.rd.tok.Lock()
			if !c.rd.end {
				c.endRead(err)
			}
			c.rd.tok.Unlock()
			return
		}
	}
}

// pollTurns is the reader goroutine's poll: it looks at the socket, when
// the token is free, until a look finds frames, the stream ends or the
// budget runs out; it says whether to serve again at once.
func (c *conn) pollTurns(pl *poll) bool {
	pl.expect(c.rd.sock.usual)
	pl.share(&c.rd.sock.alone)
	for pl.next() {
		if !c.rd.tok.TryLock() {
			continue
		}
		got := c.serve(nil)
		end, readied := c.rd.end, c.rd.sock.readied
		c.rd.sock.readied = false
		c.rd.tok.Unlock()
		if end {
			return true
		}
		if got {
			learn(&c.rd.sock.usual, nanotime()-pl.start)
			pl.hit()
			c.rd.sock.polled()
			if readied {
				runtime.Gosched()
			}
			return true
		}
	}
	pl.miss()
	return false
}

// assist is an issuer's wait for done on c: when the token is free and
// polling is on, it reads and applies the peer's frames itself until done
// says its wait is over or pl's budget ends. The issuer then sleeps as
// before if need be; the reader goroutine reads whatever comes after.
//
// Taking the token with nothing to poll would only make the reader
// goroutine wait for it. An issuer that kept the token and slept in the
// kernel on the socket (select) was tried: a thread blocked in a system
// call keeps its runtime processor until sysmon takes it back, so the
// goroutines that serve the other PEs waited for it, and an 8-byte get
// took 2 to 4 times as long on a machine with some load.
func (c *conn) assist(pl *poll, done func() bool) {
	if c.rd.sock.raw == nil || !pl.on() || !c.rd.tok.TryLock() {
		return
	}
	defer c.rd.tok.Unlock()
	pl.expect(c.rd.assistUsual)
	pl.share(&c.rd.sock.assistAlone)
	for !c.rd.end {
		c.serve(done)
		if done() {
			learn(&c.rd.assistUsual, nanotime()-pl.start)
			c.rd.sock.polled()
			return
		}
		if !pl.next() {
			return
		}
	}
}

// startAssist begins an issuer's poll.
func startAssist(d *domain) poll { return startPoll(d, &assistBudget) }

// assistBudget is the budget of every issuer's poll; assist never
// changes it.
var assistBudget = assistPoll

// serveOnce is a locked issuer's last look before it sleeps (the domain's
// callers are goroutines locked to their threads, a C program's): when
// the token is free it applies what the socket holds, without waiting,
// until done. Such a caller's sleep costs two thread hand-offs, the
// runtime processor going to another thread to run the reader goroutine
// and coming back when the wake-up comes; where polling is off (assist)
// the acknowledgement a quiet waits for is often in the socket already.
// Waiting for it in poll(2) instead was tried: no faster for a C
// program, and a thread blocked in a system call keeps its runtime
// processor from the process's other goroutines.
func (c *conn) serveOnce(done func() bool) {
	if c.rd.sock.raw == nil || !c.rd.tok.TryLock() {
		return
	}
	defer c.rd.tok.Unlock()
	if !c.rd.end {
		c.serve(done)
	}
}
