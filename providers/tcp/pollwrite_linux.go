//go:build linux

package tcp

import (
	"os"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// pollWriter returns w's writePolling as a method value.
func pollWriter(w *writer) func(fd uintptr) bool { return w.writePolling }

// vecWriter returns w's writeVectors as a method value.
func vecWriter(w *writer) func(fd uintptr) bool { return w.writeVectors }

// vecNoWaitWriter returns w's writeVectorsNoWait as a method value.
func vecNoWaitWriter(w *writer) func(fd uintptr) bool { return w.writeVectorsNoWait }

// writeVectorsNoWait writes w.pieces with writev(2) until they are
// written or the socket is full, and never waits: it always says it is
// done, and w.vn says how many bytes it wrote. Writes of up to rawBulk
// bytes are raw system calls (raw.go), which leave sysmon asleep; larger
// ones go through the runtime's hooks, as bulk writes do: made raw, a
// window of non-blocking gets of 32-64 KiB, whose replies the reader
// wrote one by one, took about twice as long.
func (w *writer) writeVectorsNoWait(fd uintptr) bool {
	w.vraw = w.vlen <= rawBulk
	w.writev(fd, 0)
	w.vraw = false
	return true
}

// writePolling writes w.pieces from w.pv, w.po with writev(2), and while
// the socket is full waits for room in poll(2) for up to pollWriteMax; it
// returns false (wait in the runtime's poller, then call again) when a
// poll timed out, true when everything is written or w.rerr says why not.
func (w *writer) writePolling(fd uintptr) bool { return w.writev(fd, pollWriteMax) }

// writeVectors is writePolling without poll(2): it returns false as soon
// as the socket is full. It is how pieces reach a socket outside the
// runtime's poller (sock), which has no vectored write of its own.
func (w *writer) writeVectors(fd uintptr) bool { return w.writev(fd, 0) }

// writev writes w.pieces from w.pv, w.po with writev(2), waiting for room
// in poll(2) for up to pollFor at a time while the socket is full; it
// returns false when it stops for room, true when everything is written
// or w.rerr says why not.
func (w *writer) writev(fd uintptr, pollFor time.Duration) bool {
	for w.pv < len(w.pieces) {
		w.vecs = w.vecs[:0]
		for i := w.pv; i < len(w.pieces) && len(w.vecs) < maxIovecs; i++ {
			p := w.pieces[i]
			if i == w.pv {
				p = p[w.po:]
			}
			if len(p) == 0 {
				continue
			}
			v := syscall.Iovec{Base: &p[0]}
			v.SetLen(len(p))
			w.vecs = append(w.vecs, v)
		}
		if len(w.vecs) == 0 {
			w.pv = len(w.pieces)
			break
		}
		writev := sys.Writev
		if w.vraw {
			writev = sys.WritevNoWait
		}
		r, e := writev(int(fd), w.vecs)
		clear(w.vecs) // drop the references to callers' buffers
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			if pollFor == 0 {
				return false
			}
			ok, err := sys.WaitWritable(int(fd), pollFor)
			if err != nil {
				w.rerr = err
				return true
			}
			if !ok {
				return false
			}
			continue
		case e != nil:
			w.rerr = os.NewSyscallError("writev", e)
			return true
		}
		w.advance(r)
	}
	return true
}

// advance moves w.pv, w.po on by n bytes written.
func (w *writer) advance(n int) {
	w.vn += n
	for n > 0 && w.pv < len(w.pieces) {
		left := len(w.pieces[w.pv]) - w.po
		if n < left {
			w.po += n
			return
		}
		n -= left
		w.pv, w.po = w.pv+1, 0
	}
	for w.pv < len(w.pieces) && w.po == len(w.pieces[w.pv]) {
		w.pv, w.po = w.pv+1, 0
	}
}

// maxIovecs is how many pieces one writev(2) takes (the kernel's
// UIO_MAXIOV is 1024).
const maxIovecs = 1024
