package tcp

import (
	"io"
	"net"
	"os"
	"syscall"
)

// The reads and writes here never block (the socket is non-blocking:
// EAGAIN ends them), so they are made as raw system calls, without the
// runtime's entersyscall and exitsyscall around them: sysmon sleeps
// deeply once every runtime processor of the process was idle (a PE
// between requests), a syscall.Read then wakes it, and woken that way it
// goes back to looking every 20 us (a timer wake-up of a thread of ours
// each time, one per 70-130 us with the kernel's timer slack); and
// exitsyscall takes the processor back through an atomic operation. A raw call holds the processor for its
// few microseconds, as any Go code would. Race builds make them through
// the syscall package, whose reads and writes tell the race detector
// that data crossed a file (rawRace).

// rawBulk is the most that a raw read or write is expected to move. A
// larger copy takes the kernel long enough that the runtime's
// entersyscall is worth its cost: through it sysmon hands the runtime
// processor to another thread while the copy lasts, so that with one
// processor per PE the writer goroutine of a large reply, say, runs
// beside it. So bulk transfers keep the calls they were measured with
// (side by side on a loaded host their bandwidth could not tell the two
// apart), and only the small ones of a round trip go raw.
const rawBulk = 16 << 10

// rawRead is read(2) of fd into p without the runtime's syscall hooks,
// or with them where bulk says that a large read is likely.
func rawRead(fd uintptr, p []byte, bulk bool) (int, error) {
	if rawRace || bulk {
		return syscall.Read(int(fd), p)
	}
	return readNoWait(fd, p)
}

// rawWrite is write(2) of p to fd without the runtime's syscall hooks,
// or with them where p is larger than rawBulk.
func rawWrite(fd uintptr, p []byte) (int, error) {
	if rawRace || len(p) > rawBulk {
		return syscall.Write(int(fd), p)
	}
	return writeNoWait(fd, p)
}

// rawConn is the socket under nc, for reads and writes that never
// block, or nil.
func rawConn(nc net.Conn) syscall.RawConn {
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			return raw
		}
	}
	return nil
}

// writeNoBlock writes p[done:] to fd without waiting and returns how far
// into p it got, with the error that stopped it: nil once everything is
// written, EAGAIN when the socket is full.
func writeNoBlock(fd uintptr, p []byte, done int) (int, error) {
	for done < len(p) {
		n, err := rawWrite(fd, p[done:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return done, err
		}
		done += n
	}
	return done, nil
}

// readNoBlock reads once into p without waiting (see rawRead for bulk):
// EAGAIN says the socket is empty, io.EOF that it ended.
func readNoBlock(fd uintptr, p []byte, bulk bool) (int, error) {
	for {
		n, err := rawRead(fd, p, bulk)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, err
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// writeRaw writes w.rbuf[w.rn:] to the socket without waiting: it stops
// at the first EAGAIN. It is a method value made once, so the reader's
// writes allocate nothing.
func (w *writer) writeRaw(fd uintptr) bool {
	var err error
	if w.rn, err = writeNoBlock(fd, w.rbuf, w.rn); err != nil && err != syscall.EAGAIN {
		w.rerr = os.NewSyscallError("write", err)
	}
	return true
}

// readRaw reads once into s.buf without waiting: a socket found empty
// leaves s.n 0 and s.err nil. It is a method value made once, so that
// reads allocate nothing.
func (s *sockReader) readRaw(fd uintptr) {
	n, err := readNoBlock(fd, s.buf, s.bulk)
	// A read that filled its buffer and moved more than rawBulk says that
	// a bulk transfer is under way: the next one goes through the
	// runtime's hooks, until one moves less. One that drained the socket
	// (a large reply) says nothing of the next.
	s.bulk = n == len(s.buf) && n > rawBulk
	if err != syscall.EAGAIN {
		s.n, s.err = n, err
	}
}

// peekRaw is the reader goroutine's condition for waking (park). Called
// first, once the runtime's poller is armed, it says whether the socket
// has something to read (data, its end or an error) without reading it;
// called again, after the poller saw the socket readable, it says yes
// without a look: a wake-up that finds nothing costs one empty read.
func (s *sockReader) peekRaw(fd uintptr) bool {
	if s.looked {
		return true
	}
	s.looked = true
	for {
		// A raw call (see rawRead): the reader goroutine makes it on
		// its way to park, and it is the first system call after a
		// wake-up, when sysmon sleeps deepest.
		err := peekNoWait(fd)
		if err == syscall.EINTR {
			continue
		}
		return err != syscall.EAGAIN
	}
}
