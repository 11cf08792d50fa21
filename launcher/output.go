package launcher

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"sync"
)

// output serializes everything the job writes to one of the launcher's
// writers, so lines from different PEs and the launcher's own messages
// never interleave mid-line.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p in one piece. Errors are dropped: a closed terminal must
// not make PEs die of SIGPIPE or the launcher stop supervising them.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.w.Write(p)
	o.mu.Unlock()
	return len(p), nil
}

// forPE returns what a PE's stream is connected to: the launcher's file
// itself when untagged and it is a file (no copying), else a writer that
// tags or serializes.
func (o *output) forPE(tag bool, pe int) io.Writer {
	if !tag {
		if f, ok := o.w.(*os.File); ok {
			return f
		}
		return o
	}
	return &lineWriter{out: o, prefix: []byte("[pe " + strconv.Itoa(pe) + "] ")}
}

// maxLine is the longest line a lineWriter holds back; a longer one is
// cut, and each piece is tagged as its own line, so one PE that writes
// without newlines cannot make the launcher buffer without bound.
const maxLine = 64 << 10

// lineWriter tags each complete line of one PE stream with prefix and
// writes whole lines only. exec's copying goroutine is its only writer;
// flush is called after the PE has been waited for.
type lineWriter struct {
	out    *output
	prefix []byte
	buf    []byte // the incomplete last line
	scr    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	l.scr = l.scr[:0]
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLine - len(l.buf)
			if len(p) < room {
				l.buf = append(l.buf, p...)
				break
			}
			l.buf = append(l.buf, p[:room]...)
			p = p[room:]
			l.scr = l.line(l.scr, nil)
			continue
		}
		l.scr = l.line(l.scr, p[:i])
		p = p[i+1:]
	}
	if len(l.scr) > 0 {
		l.out.Write(l.scr)
	}
	if cap(l.scr) > 4*maxLine {
		l.scr = nil
	}
	return n, nil
}

// line appends prefix, the held-back part, rest and a newline to b.
func (l *lineWriter) line(b, rest []byte) []byte {
	b = append(b, l.prefix...)
	b = append(b, l.buf...)
	b = append(b, rest...)
	l.buf = l.buf[:0]
	return append(b, '\n')
}

// flush writes a last line that had no newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		l.out.Write(l.line(nil, nil))
	}
}
