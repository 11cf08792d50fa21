package pmi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// errWire marks bytes from the PMI server that are not the protocol.
var errWire = errors.New("pmi: malformed message")

// maxLine bounds one PMI-1 line and one PMI-2 message: values the launcher
// holds are at most a few kilobytes (vallen_max is 1024 under Hydra), so a
// longer message is a broken server, not data to buffer.
const maxLine = 64 << 10

// readLine1 reads one PMI-1 line (without its newline).
func readLine1(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, err := r.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxLine {
			return "", fmt.Errorf("%w: a line longer than %d bytes", errWire, maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(b) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
}

// parse1 splits a PMI-1 line, "cmd=get_result rc=0 value=x", into its
// fields. A word without '=' continues the previous value: servers put
// free text in msg= without escaping its spaces.
func parse1(line string) (map[string]string, error) {
	m := map[string]string{}
	last := ""
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			if last == "" {
				return nil, fmt.Errorf("%w: %q: a word outside any key=value", errWire, clip(line))
			}
			m[last] += " " + w
			continue
		}
		m[k] = v
		last = k
	}
	if m["cmd"] == "" {
		return nil, fmt.Errorf("%w: %q has no cmd", errWire, clip(line))
	}
	return m, nil
}

// encode2 frames a PMI-2 command: a six-character decimal length, then
// "key=value;" pairs, a ';' inside a key or value doubled.
func encode2(kv ...string) []byte {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(strings.ReplaceAll(kv[i], ";", ";;"))
		b.WriteByte('=')
		b.WriteString(strings.ReplaceAll(kv[i+1], ";", ";;"))
		b.WriteByte(';')
	}
	return []byte(fmt.Sprintf("%-6d", b.Len()) + b.String())
}

// read2 reads one PMI-2 message: its length header and its body.
func read2(r io.Reader) ([]byte, error) {
	var hdr [6]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n < 0 || n > maxLine {
		return nil, fmt.Errorf("%w: length header %q: want a decimal from 0 to %d", errWire, hdr[:], maxLine)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// parse2 splits a PMI-2 body, "cmd=kvs-get-response;rc=0;value=x;", into
// its fields; ";;" is a ';' inside a value.
func parse2(body []byte) (map[string]string, error) {
	m := map[string]string{}
	s := string(body)
	for len(s) > 0 {
		var field strings.Builder
		i := 0
		for ; i < len(s); i++ {
			if s[i] == ';' {
				if i+1 < len(s) && s[i+1] == ';' {
					field.WriteByte(';')
					i++
					continue
				}
				break
			}
			field.WriteByte(s[i])
		}
		if i < len(s) {
			i++ // the separator
		}
		s = s[i:]
		f := field.String()
		if f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %q: field %q is not key=value", errWire, clip(string(body)), clip(f))
		}
		m[k] = v
	}
	if m["cmd"] == "" {
		return nil, fmt.Errorf("%w: %q has no cmd", errWire, clip(string(body)))
	}
	return m, nil
}

// clip shortens what a broken server sent for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
