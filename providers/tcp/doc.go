// Package tcp is the provider "tcp": PEs on any hosts, connected pairwise
// by TCP. A put travels as a frame that the target's progress goroutine
// copies into its memory; a get or fetching atomic is a request answered
// by a reply; an atomic is executed at the target with the same
// sync/atomic operations (internal/mem.Atomic) the target uses for its own
// atomics, so remote and local atomics on a word are atomic with each
// other.
//
// Import it for its side effect (or import providers/all); it registers
// itself with core.Register.
//
// # Connections
//
// Open listens (GOSHMEM_TCP_ADDR, GOSHMEM_TCP_IFACE; by default every
// interface and a free port, or 127.0.0.1 and a free port when every PE
// of the job runs on this host) and exchanges, through the job's bootstrap,
// each PE's addresses: its listening address, or when it listens on every
// interface the addresses of all its up interfaces, loopback last. Each
// PE then dials every PE of lower rank, trying their addresses in order,
// and accepts the others, so each pair has exactly one connection and two
// PEs that dial at once never make two. Open returns once all are made,
// on every PE (core.Agree), or fails on every PE.
//
// Each connection is authenticated by a challenge and response on the
// job's secret (core.Config.Secret; see auth.go). The secret never crosses
// the wire; a replayed handshake fails on a fresh challenge; a stranger who
// connects gets at most GOSHMEM_TCP_TIMEOUT to prove it, at most
// maxHandshakes strangers are heard at once, and a connection is only
// ever attached to the PE whose proof it carried. Each refusal is logged.
// The listener stays open until Close, refusing everyone: every pair is
// connected already.
//
// # Sending
//
// Issuing goroutines encode frames (wire.go: fixed little-endian headers,
// no reflection) into the connection's queue: a put of up to InjectSize
// bytes is copied there, so Put returns at once; a larger put is queued by
// reference and written straight from the caller's buffer (writev) before
// Put returns. Small puts are combined: a writer goroutine per connection,
// woken when a burst starts, writes everything queued in one system call,
// and whatever is queued while it writes goes in its next one, so a burst
// of puts leaves in few writes without a timer (GOSHMEM_TCP_FLUSH_IDLE
// makes it wait a little for more). A put that starts no burst (the last
// one was more than burstGap ago and the writer sleeps) is written by its
// issuer, saving the writer's wake-up; so are blocking requests (gets,
// fetching atomics), whose issuers wait for the reply anyway, the queue at
// Quiet, and a queue past GOSHMEM_TCP_BUFFER bytes (the backpressure).
// Writes of up to 16 KiB, the issuer's or the writer goroutine's, are raw
// system calls that wait for room in the runtime's poller, like the
// reader's below: through the net package every one woke the runtime's
// sysmon in a PE that had been idle. Nagle's algorithm is off.
//
// # Progress and completion
//
// A reader goroutine per connection applies the peer's frames in order:
// puts are read from the socket into the region, atomics are executed,
// requests are answered (replies of more than InjectSize bytes by
// reference to the region, written from there). Replies are read into
// the requester's buffer. A payload of up to InjectSize bytes comes
// through the connection's 256 KiB read buffer; of a larger one the
// buffer gives what it holds and the rest is read from the socket
// straight into the region or the requester's buffer. Before the reader
// waits for the socket it writes the replies and acknowledgements it
// queued, one large reply of up to 256 KiB by reference included (one
// writev from the region), but never waits to write:
// what the socket does not take at once it puts back at the head of the
// queue for the writer goroutine, and lets that goroutine run before it
// polls. Larger replies, and two or more by reference at once (a
// stream), are the writer goroutine's from the start. Two
// PEs that write to each other can therefore never each wait for the
// other to read. Where a 16-64 KiB get's time went when the writer
// goroutine wrote every large reply: docs/measuring.md, "A large get's
// time over tcp".
//
// Reading is a connection's receive token (token.go): whoever holds it
// reads and applies frames exactly as above. The reader goroutine holds
// it only while it reads; before it parks it lets it go and waits for the
// socket to become readable without reading it, looking once more after
// the runtime's poller is armed, so no frame is ever left unread. An
// issuer waiting for its reply or its quiet's acknowledgement takes the
// token when it is free and polling is on, reads its own reply (and
// applies whatever else comes first), for at most assistPoll, and so
// saves the reader's wake-up of it, which costs about 1.2 us of an 8 us
// round trip here. It stops only at a frame's boundary with nothing
// buffered.
//
// The reader polls, adaptively (poll.go). A reader that sleeps in the
// runtime's poller is woken through an idle thread's wake-up, which on an
// idle CPU costs more than a small operation's round trip, and a round
// trip has two. So after draining its socket the reader looks again, with
// non-blocking reads, for a budget that grows while looks find frames and
// halves while they do not, then sleeps; a sleep that a frame ended soon
// after grows a zero budget again. The budget starts at POLL, so that a
// job's first operations are served by a polling reader as its later
// ones are. A poll learns how long its waits
// usually take and yields the CPU (sched_yield) only once what it waits
// for is late, every few microseconds, or at every look where the host's
// CPUs have no room or until its yields have shown that no other thread
// waits for its CPU (a thread woken by a socket's data runs on the
// writer's CPU, and two pollers that take turns there, neither yielding,
// never move apart). Its looks and yields are raw system calls, which
// never wake the runtime's sysmon.
//
// Whoever polls a socket reads it itself, so the runtime's poller need
// watch it only while a goroutine sleeps on it. On Linux a connection
// takes its socket out of the runtime's epoll set once the handshake is
// done, where its readers poll (GOSHMEM_TCP_SOCKET=auto: the PEs that
// share its CPUs fit them, POLL is not 0, and the callers are not a C program's,
// which measured slower with it; sock_linux.go): a descriptor of its own,
// and two epoll sets of its own, for reading and for writing, each in the
// runtime's poller. The socket joins a set when a goroutine sleeps on it
// and leaves the read set when a poll finds a frame, the write set when a
// write that waited ends: a segment that comes while the socket is polled
// runs no epoll callback and wakes no thread of the runtime's. Where nobody
// polls, the socket would sit in its own set for good, one level of epoll
// deeper than the runtime's, so it stays the runtime's there.
// An issuer waiting for a reply or an acknowledgement polls only while it
// holds the receive token (with GOMAXPROCS=1, while the reader is not
// running); one that cannot take it sleeps at once, and the reader that
// wakes it lets it run on its own thread (runtime.Gosched) before it
// looks again. A second poller per PE at all times would need a CPU
// more, and yielding to goroutines between looks wakes a thread for
// every idle runtime processor, which measured 3 to 10 times slower on
// loaded CPUs.
//
// Nobody polls with GOSHMEM_TCP_POLL=0 or when this host runs more PEs of
// the job than it has CPUs (counted once, at Open, for this and the
// sockets above: the PEs that advertised the same addresses; see
// sharingCPUs). Where the PEs' runtime processors (GOMAXPROCS)
// together outnumber the CPUs, waking an issuer also wakes a thread for an
// idle processor, which competes with the pollers, so there the readers
// poll only while the kernel's pressure stall information shows threads
// waiting for a CPU less than 25% of the time (GOSHMEM_TCP_POLL_STALL;
// sampled every 10ms, the first time 1ms after the first look, with room
// assumed until then, cpuroom.go; where the kernel keeps none, never). oshrun gives each PE
// its share of the CPUs (GOMAXPROCS = CPUs / PEs), so its jobs stay on
// the open side of that gate.
//
// Measured side by side with shmemperf (2 PEs as processes, 8 bytes) on
// two CPUs loaded by other jobs (CPU pressure 83-93%), with GOMAXPROCS=1
// per PE: put+quiet 7.5-9.5 us polling against 13-16 not polling, get
// 7.7-8.4 against 10-18, fetch-add 7.6-12.6 against 13-16, the put rate
// 4.0 M/s against 1.5; with the default GOMAXPROCS (2), where the gate
// is closed, the figures are those of not polling (16-27 us either way).
// On a nearly idle host, where not polling took 30-42 us, polling with
// two processors each took 19-21 us.
//
// The receive token, measured the same way in alternating runs (CPU
// pressure 20-68%, GOMAXPROCS=1 per PE, medians of 4 to 8 runs each),
// with and without it: put+quiet 7.1-7.5 us against 8.0-8.4; get 7.3-7.6
// against 7.8-8.1; fetch-add 8.0-8.2 either way, within the noise; the
// 8-byte put rate 4.45-4.5 M/s against 3.6-4.1, whose windows of 64 puts
// spend a third issuing (about 80 ns a put) and two thirds in quiet, an
// acknowledgement's round trip. Of a get's 8-10 us, the issuer's write
// takes 1.6-2.9 us, the wire and the peer's answer 4.5-7 us, and the
// reader's wake-up of the issuer, which the token saves, 1.2 us: the
// token cannot take a round trip below the two writes and two reads it
// needs. With POLL=0 nobody takes the token and figures are those of
// not polling. Where a get's time goes today: docs/measuring.md, "Where
// a get's time goes over tcp".
//
// A blocked move (core.BlockMover: shmem's iput, iget, ibput and ibget)
// is one frame each way (blocks.go): a put's blocks gathered into the
// send queue and scattered by the target's reader as it reads them, a
// get answered by one reply of the blocks gathered from the target's
// region, which the issuer's reader scatters into place; up to
// maxBlocksFrame bytes of blocks a frame.
//
// Puts and non-fetching atomics are counted per connection; the target
// acknowledges how many it has applied whenever it has drained its socket
// (and at least every ackEvery operations), and the acknowledgement
// completes them on the endpoints' counters. Quiet writes what is queued
// and sleeps until every operation numbered on its endpoint's counter
// before it began has completed, whichever goroutine issued it (the
// counter's watermark, which later operations cannot stand in for, as a
// count of them could). Fence is free: each
// pair has one connection, applied in order by one goroutine
// (Info.Order: put-after-put, atomic-after-atomic).
//
// # Failure
//
// A connection that breaks (the peer's process died and its kernel closed
// the socket; keepalive probes or unacknowledged data found its host gone
// after about GOSHMEM_TCP_TIMEOUT; or it sent a frame that breaks the
// protocol: malformed, an unknown operation, memory outside a region) is
// dropped, with a log line naming the peer when it was the peer's fault.
// Every outstanding request and unacknowledged operation to that peer
// fails with a *core.PeerLostError naming it, and so does every later
// operation. Nothing is written outside a region: every frame is checked
// against the target's region before a byte of it is applied.
//
// # Lifetimes and ownership
//
// A domain owns its listener, its connections and their goroutines (one
// accept loop while open, one reader and one writer per connection) and
// its regions' memory (anonymous mappings from internal/sys, outside the Go
// heap). Close is collective: after a bootstrap barrier it queues a BYE on
// every connection, waits (up to GOSHMEM_TCP_TIMEOUT) for each peer's BYE,
// ends every goroutine and only then retires the regions' memory (see
// core.Domain's Close), so no progress goroutine ever touches freed memory. A registered region
// (RegisterRegion) is the program's memory, which the progress goroutines
// read and write in place; Close leaves it to the program, untouched.
// After Close every operation fails
// with core.ErrClosed and Region.Local returns nil. The Bootstrap belongs
// to the caller.
//
// # Waiting
//
// The domain implements core.LocalWaiter: the progress goroutines, which
// apply every remote write, wake a PE waiting on the bytes a put or atomic
// touched (see waiter.go), so wait_until sleeps instead of polling.
package tcp
