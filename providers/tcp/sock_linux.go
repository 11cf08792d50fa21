//go:build linux

package tcp

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// sock is a connection's socket kept outside the runtime's poller
// (GOSHMEM_TCP_SOCKET=own, or auto where readers poll).
//
// Go's net package keeps every socket in the runtime's epoll instance for
// as long as it is open, so every segment that arrives runs the kernel's
// epoll callback, and wakes a thread of ours that waits in epoll_wait if
// there is one, even while the holder of the receive token polls the
// socket with raw reads and nobody waits for it: on this host the C floor
// pair with its sockets in an epoll set is 0.35-0.7 µs slower per round
// trip. A sock owns a descriptor of the socket outside that set, and two
// epoll instances of its own, one for waiting to read and one to write,
// each of them in the runtime's poller. The socket joins one of them when
// a goroutine waits on it and leaves it once polls pay off (sockWait), so
// a waiting goroutine still sleeps in the runtime's poller, and a socket
// being polled costs no callback.
//
// sock is a net.Conn for the connection's blocking reads and writes, and
// its SyscallConn is a syscall.RawConn for the non-blocking ones, as a
// TCPConn's are; deadlines are not supported (the provider sets them only
// during its handshake, before the socket is taken over).
type sock struct {
	fd int
	// state counts the operations under way on fd, two each, with
	// sockClosed or'd in once Close began: fd is closed when both say
	// so, by whoever sees it last.
	state        atomic.Int64
	in, out      sockWait
	laddr, raddr net.Addr
	raw          sockRaw

	// The read under way (Read) and the write (Write), with method values
	// made once, so that neither allocates.
	rp, wp          []byte
	rn, wn          int
	rerr, werr      error
	readFn, writeFn func(fd uintptr) bool
}

const sockClosed = 1

// sockWait is one of a sock's epoll instances, and its waiters.
//
// The socket joins the set when a goroutine waits on it and stays there
// until settle takes it out, once nobody waits: a poll that found what it
// waited for settles the read set (sockReader.polled), a write that
// waited settles the write set as it ends. So a reader whose polls miss
// and that sleeps after every frame sleeps with no epoll_ctl at all, and
// a socket whose polls pay off is in no set.
type sockWait struct {
	f   *os.File        // the epoll instance, in the runtime's poller
	raw syscall.RawConn // f's
	fd  int             // the socket's
	out bool            // waiting to write, not to read

	mu      sync.Mutex
	watched atomic.Bool // the socket is in the set (written under mu)
	waiters int         // goroutines in until

	// serial lets one goroutine at a time wait with its condition cur,
	// which call, a method value made once, calls with the socket's
	// descriptor, so that a wait allocates nothing.
	serial sync.Mutex
	cur    func(fd uintptr) bool
	call   func(ep uintptr) bool
	err    error
	// watch and unwatch are method values too.
	watch, unwatch func(fd uintptr)
}

// sockRaw is a sock's syscall.RawConn.
type sockRaw struct{ s *sock }

// ownSocket takes nc's socket out of the runtime's poller: a sock with a
// descriptor of its own replaces it, and nc is closed. Where that cannot
// be done, nc is kept as it is, with the error.
func ownSocket(nc net.Conn) (net.Conn, error) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = sys.DupCloexec(int(f)) }); err != nil {
		return nc, err
	}
	if derr != nil {
		return nc, derr
	}
	s := &sock{fd: fd, laddr: tc.LocalAddr(), raddr: tc.RemoteAddr()}
	s.raw.s = s
	s.readFn, s.writeFn = s.readInto, s.writeOnce
	if err := s.in.open(fd, false); err != nil {
		_ = sys.CloseFD(fd)
		return nc, err
	}
	if err := s.out.open(fd, true); err != nil {
		_ = s.in.f.Close()
		_ = sys.CloseFD(fd)
		return nc, err
	}
	// The descriptor shares the open socket, non-blocking as the net
	// package made it; closing nc takes nc's out of the runtime's poller.
	_ = nc.Close()
	return s, nil
}

// open makes w's epoll instance, for fd.
func (w *sockWait) open(fd int, out bool) error {
	ep, err := sys.EpollCreate()
	if err != nil {
		return err
	}
	w.f = os.NewFile(uintptr(ep), "epoll")
	if w.raw, err = w.f.SyscallConn(); err != nil {
		_ = w.f.Close()
		return err
	}
	w.fd, w.out = fd, out
	w.call, w.watch, w.unwatch = w.callCur, w.add, w.del
	return nil
}

func (w *sockWait) add(ep uintptr)       { w.err = sys.EpollWatch(int(ep), w.fd, w.out) }
func (w *sockWait) del(ep uintptr)       { w.err = sys.EpollUnwatch(int(ep), w.fd) }
func (w *sockWait) callCur(uintptr) bool { return w.cur(uintptr(w.fd)) }

// until calls f with the socket's descriptor until it says it is done,
// waiting between calls until the socket is ready (to read, or to write
// if w.out), has failed or ended, or the sock is closed. Its first call
// comes after the runtime's poller has begun to watch the set for this
// wait, so that a readiness f finds nothing of is always seen: f's first
// call is the look, and f need not look before (the runtime forgets what
// its poller saw of the set before a wait begins).
func (w *sockWait) until(f func(fd uintptr) bool) error {
	w.mu.Lock()
	if !w.watched.Load() {
		if err := w.raw.Control(w.watch); err != nil {
			w.mu.Unlock()
			return net.ErrClosed
		}
		if err := w.err; err != nil {
			w.mu.Unlock()
			return err
		}
		w.watched.Store(true)
	}
	w.waiters++
	w.mu.Unlock()

	w.serial.Lock()
	w.cur = f
	err := w.raw.Read(w.call)
	w.cur = nil
	w.serial.Unlock()

	w.mu.Lock()
	w.waiters--
	w.mu.Unlock()
	if err != nil {
		return net.ErrClosed
	}
	return nil
}

// settle takes the socket out of the set if it is there and nobody waits.
func (w *sockWait) settle() {
	if !w.watched.Load() {
		return
	}
	w.mu.Lock()
	if w.waiters == 0 && w.watched.Load() {
		// Closed, the set is gone with the socket in it.
		_ = w.raw.Control(w.unwatch)
		w.watched.Store(false)
	}
	w.mu.Unlock()
}

// settleRead is the call of a poll that paid off (sockWait.settle).
func (s *sock) settleRead() { s.in.settle() }

// hold counts an operation on fd under way; it fails once the sock is
// closed.
func (s *sock) hold() bool {
	for {
		st := s.state.Load()
		if st&sockClosed != 0 {
			return false
		}
		if s.state.CompareAndSwap(st, st+2) {
			return true
		}
	}
}

// release ends an operation that hold counted, closing fd after the last
// once the sock is closed.
func (s *sock) release() {
	if s.state.Add(-2) == sockClosed {
		_ = sys.CloseFD(s.fd)
	}
}

// Close shuts the socket down, which wakes every goroutine waiting on
// it, and closes it once the operations under way have returned.
func (s *sock) Close() error {
	if !s.hold() {
		return net.ErrClosed
	}
	s.state.Or(sockClosed)
	_ = syscall.Shutdown(s.fd, syscall.SHUT_RDWR)
	_ = s.in.f.Close()
	_ = s.out.f.Close()
	s.release()
	return nil
}

// CloseWrite half-closes the socket: the peer reads the stream's end.
func (s *sock) CloseWrite() error {
	if !s.hold() {
		return net.ErrClosed
	}
	defer s.release()
	return os.NewSyscallError("shutdown", syscall.Shutdown(s.fd, syscall.SHUT_WR))
}

// Read reads into p, waiting for the socket if it is empty. The holder
// of the receive token alone calls it.
func (s *sock) Read(p []byte) (int, error) {
	if !s.hold() {
		return 0, net.ErrClosed
	}
	defer s.release()
	s.rp, s.rn, s.rerr = p, 0, nil
	err := s.in.until(s.readFn)
	n := s.rn
	if err == nil {
		err = s.rerr
	}
	s.rp, s.rerr = nil, nil
	return n, err
}

// readInto is Read's condition: one read of the socket into s.rp. A read
// that waits is within a frame: its size is the buffer's, not the
// frame's, so it goes raw as small ones do.
func (s *sock) readInto(fd uintptr) bool {
	n, err := readNoBlock(fd, s.rp, false)
	if err == syscall.EAGAIN {
		return false
	}
	s.rn, s.rerr = n, err
	return true
}

// Write writes all of p, waiting for room in the socket as need be. The
// writer's lock is held.
func (s *sock) Write(p []byte) (int, error) {
	if !s.hold() {
		return 0, net.ErrClosed
	}
	defer s.release()
	s.wp, s.wn, s.werr = p, 0, nil
	err := s.writeLoop()
	n := s.wn
	if err == nil {
		err = s.werr
	}
	s.wp, s.werr = nil, nil
	return n, err
}

// writeLoop writes s.wp without waiting and, if the socket is full, waits
// for room and writes on.
func (s *sock) writeLoop() error {
	if s.writeOnce(uintptr(s.fd)) {
		return nil
	}
	defer s.out.settle()
	return s.out.until(s.writeFn)
}

// writeOnce is Write's condition: it writes until everything is written,
// an error or a full socket.
func (s *sock) writeOnce(fd uintptr) bool {
	var err error
	s.wn, err = writeNoBlock(fd, s.wp, s.wn)
	if err == syscall.EAGAIN {
		return false
	}
	if err != nil {
		s.werr = os.NewSyscallError("write", err)
	}
	return true
}

func (s *sock) LocalAddr() net.Addr  { return s.laddr }
func (s *sock) RemoteAddr() net.Addr { return s.raddr }

// errNoDeadline is what setting a deadline on a sock says.
var errNoDeadline = &net.OpError{Op: "set deadline", Net: "tcp", Err: syscall.ENOTSUP}

func (s *sock) SetDeadline(time.Time) error      { return errNoDeadline }
func (s *sock) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (s *sock) SetWriteDeadline(time.Time) error { return errNoDeadline }

// SyscallConn returns the sock's raw connection.
func (s *sock) SyscallConn() (syscall.RawConn, error) { return &s.raw, nil }

// Control calls f with the socket's descriptor, which stays open until f
// returns.
func (r *sockRaw) Control(f func(fd uintptr)) error {
	s := r.s
	if !s.hold() {
		return net.ErrClosed
	}
	f(uintptr(s.fd))
	s.release()
	return nil
}

// Read calls f until it says it is done, waiting for the socket to be
// readable between calls. The first call too comes once the runtime's
// poller watches for this wait (sockWait.until): what f finds empty there
// wakes it when it comes.
func (r *sockRaw) Read(f func(fd uintptr) bool) error {
	s := r.s
	if !s.hold() {
		return net.ErrClosed
	}
	defer s.release()
	return s.in.until(f)
}

// Write calls f until it says it is done, waiting for the socket to be
// writable before each call after the first.
func (r *sockRaw) Write(f func(fd uintptr) bool) error {
	s := r.s
	if !s.hold() {
		return net.ErrClosed
	}
	defer s.release()
	if f(uintptr(s.fd)) {
		return nil
	}
	defer s.out.settle()
	return s.out.until(f)
}
