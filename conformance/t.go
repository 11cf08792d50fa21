package conformance

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// T is what a case reports to, one per PE. It satisfies testify's
// require.TestingT, so cases use require and assert as tests do. FailNow
// ends the PE's goroutine; the harness then marks the PE lost, so the other
// PEs fail fast instead of waiting for it.
type T struct {
	pe     int
	flow   int // how many operations a flow case issues (Harness.FlowOps)
	mu     sync.Mutex
	errs   []string
	failed bool
	logs   []string
}

// PE is the number of the PE this T reports for.
func (t *T) PE() int { return t.pe }

// Errorf records a failure and goes on.
func (t *T) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	t.errs = append(t.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// FailNow ends the case on this PE.
func (t *T) FailNow() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	runtime.Goexit()
}

// Fatalf records a failure and ends the case on this PE.
func (t *T) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	t.FailNow()
}

// Logf records a message shown only if the case fails.
func (t *T) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.logs = append(t.logs, fmt.Sprintf(format, args...))
}

// Helper exists for testify; line attribution is by message here.
func (t *T) Helper() {}

// Failed reports whether the PE recorded a failure.
func (t *T) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *T) report() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, e := range t.errs {
		fmt.Fprintf(&b, "PE %d: %s\n", t.pe, e)
	}
	for _, l := range t.logs {
		fmt.Fprintf(&b, "PE %d log: %s\n", t.pe, l)
	}
	return b.String()
}
