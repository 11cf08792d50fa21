//go:build linux

package sys

import (
	"bytes"
	"fmt"
	"os"
	"time"
)

// CPUStall reads how long runnable threads of this host have waited for a
// CPU: the "some" total of the kernel's pressure stall information
// (/proc/pressure/cpu). Its growth over an interval, divided by the
// interval, is the share of that time in which some thread wanted a CPU
// and found none free. It is not safe for concurrent use.
type CPUStall struct {
	f   *os.File
	buf [256]byte
}

// OpenCPUStall opens the host's CPU pressure file. It fails where the
// kernel keeps no pressure information (built without it, or booted with
// psi=0).
func OpenCPUStall() (*CPUStall, error) {
	f, err := os.Open("/proc/pressure/cpu")
	if err != nil {
		return nil, err
	}
	s := &CPUStall{f: f}
	if _, err := s.Total(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return s, nil
}

// Total returns the time some runnable thread has waited for a CPU since
// the host booted. It reads the file afresh with one system call.
func (s *CPUStall) Total() (time.Duration, error) {
	n, err := s.f.ReadAt(s.buf[:], 0)
	if n == 0 {
		return 0, fmt.Errorf("read %s: %w", s.f.Name(), err)
	}
	return parseStall(s.buf[:n])
}

// Close closes the file.
func (s *CPUStall) Close() error { return s.f.Close() }

// parseStall finds total=MICROSECONDS on the line that starts with
// "some", allocating nothing.
func parseStall(b []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.HasPrefix(line, []byte("some ")) {
		return 0, fmt.Errorf("cpu pressure %q: no \"some\" line", b)
	}
	_, tot, ok := bytes.Cut(line, []byte("total="))
	if !ok {
		return 0, fmt.Errorf("cpu pressure %q: no total", line)
	}
	tot = bytes.TrimSpace(tot)
	var us int64
	for _, c := range tot {
		if c < '0' || c > '9' || us > (1<<62)/10 {
			return 0, fmt.Errorf("cpu pressure %q: total is not a count of microseconds", line)
		}
		us = us*10 + int64(c-'0')
	}
	if len(tot) == 0 {
		return 0, fmt.Errorf("cpu pressure %q: empty total", line)
	}
	return time.Duration(us) * time.Microsecond, nil
}
