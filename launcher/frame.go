package launcher

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/globalexit"
)

// An agent on a remote host (RunAgent) reports to the launcher in frames
// on its standard output, which the rsh command carries back: a 9-byte
// header (kind, rank and payload length, big-endian) and the payload.
//
//	started  payload: the PE's pid, decimal
//	stdout   payload: bytes the PE wrote to its standard output
//	stderr   payload: bytes the PE wrote to its standard error
//	exit     payload: the job status it implies (4 bytes, signed), 1 if a
//	         signal killed it, then how it ended, as text
//	done     rank 0, no payload: every PE of the host has exited and the
//	         host's job files are gone
//	global   the PE that called global_exit, before its exit frame;
//	         payload: the status it gave (4 bytes, signed), then, when
//	         the library ended the job on an error, why, as text
//	stopped  the PE's process was stopped by a signal (payload 1) or runs
//	         again (payload 0), sent when the agent sees it change
type frameKind uint8

const (
	frameStarted frameKind = 1 + iota
	frameStdout
	frameStderr
	frameExit
	frameDone
	frameGlobalExit
	frameStopped
)

const (
	frameHeader = 9
	// maxFrame bounds a payload: output is sent in pieces of at most
	// this, so a reader never holds more.
	maxFrame = 64 << 10
)

type frame struct {
	kind    frameKind
	rank    int
	payload []byte // valid until the next readFrame
}

// readFrame reads one frame; a frame the protocol does not allow is an
// error wrapping core.ErrInvalid, and so is a stream that ends inside
// one. buf is reused for the payload.
func readFrame(r *bufio.Reader, buf []byte) (frame, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("agent stream ends inside a frame header: %w", core.ErrInvalid)
		}
		return frame{}, buf, err
	}
	f := frame{kind: frameKind(h[0]), rank: int(binary.BigEndian.Uint32(h[1:5]))}
	n := binary.BigEndian.Uint32(h[5:9])
	if f.kind < frameStarted || f.kind > frameStopped {
		return frame{}, buf, fmt.Errorf("agent sent a frame of unknown kind %d: %w", h[0], core.ErrInvalid)
	}
	if n > maxFrame {
		return frame{}, buf, fmt.Errorf("agent sent a %d-byte frame; at most %d are allowed: %w", n, maxFrame, core.ErrInvalid)
	}
	if lo, hi := frameBounds(f.kind); n < lo || n > hi {
		return frame{}, buf, fmt.Errorf("agent sent a %d-byte frame of kind %d, which holds %d to %d: %w", n, f.kind, lo, hi, core.ErrInvalid)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	f.payload = buf[:n]
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return frame{}, buf, fmt.Errorf("agent stream ends inside a %d-byte frame: %w", n, core.ErrInvalid)
	}
	return f, buf, nil
}

// frameBounds is the payload length a kind allows.
func frameBounds(k frameKind) (lo, hi uint32) {
	switch k {
	case frameStarted:
		return 1, 20 // a decimal pid
	case frameExit:
		return 5, maxFrame
	case frameDone:
		return 0, 0
	case frameGlobalExit:
		return 4, 4 + globalexit.MaxReason
	case frameStopped:
		return 1, 1
	}
	return 0, maxFrame
}

// exitPayload and parseExit are the exit frame's payload.
func exitPayload(code int, signaled bool, what string) []byte {
	p := make([]byte, 5, 5+len(what))
	binary.BigEndian.PutUint32(p, uint32(int32(code)))
	if signaled {
		p[4] = 1
	}
	return append(p, what...)
}

func parseExit(p []byte) (code int, signaled bool, what string, err error) {
	if len(p) < 5 || p[4] > 1 {
		return 0, false, "", fmt.Errorf("agent sent a malformed exit frame (%d bytes): %w", len(p), core.ErrInvalid)
	}
	return int(int32(binary.BigEndian.Uint32(p))), p[4] == 1, string(p[5:]), nil
}

// stoppedPayload is the stopped frame's payload.
func stoppedPayload(stopped bool) []byte {
	if stopped {
		return []byte{1}
	}
	return []byte{0}
}

// frameWriter writes whole frames to one stream for many goroutines.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error // the first write error; later frames are dropped
}

func (fw *frameWriter) write(kind frameKind, rank int, payload []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	for first := true; first || len(payload) > 0; first = false {
		chunk := payload[:min(len(payload), maxFrame)]
		payload = payload[len(chunk):]
		if fw.err != nil {
			return fw.err
		}
		var h [frameHeader]byte
		h[0] = byte(kind)
		binary.BigEndian.PutUint32(h[1:5], uint32(rank))
		binary.BigEndian.PutUint32(h[5:9], uint32(len(chunk)))
		if _, fw.err = fw.w.Write(h[:]); fw.err == nil {
			_, fw.err = fw.w.Write(chunk)
		}
	}
	return fw.err
}

// peStream is an io.Writer for one PE's stdout or stderr that forwards
// what it gets as frames. A write error (the launcher is gone) is not
// passed on: the PE must not die of its output; the agent ends it when
// its input ends.
type peStream struct {
	fw   *frameWriter
	kind frameKind
	rank int
}

func (s peStream) Write(p []byte) (int, error) {
	_ = s.fw.write(s.kind, s.rank, p)
	return len(p), nil
}
