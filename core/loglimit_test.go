package core_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/core"
)

// syncBuf is a log destination safe for concurrent writers.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// A flood of one message writes the first Burst lines, then one line
// with the count of the rest.
func TestLogLimit(t *testing.T) {
	var out syncBuf
	log := slog.New(slog.NewTextHandler(&out, nil))
	ll := &core.LogLimit{Burst: 3, Interval: time.Hour}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { ll.Warn(log, "refused", "from", i) })
	}
	wg.Wait()
	require.Len(t, out.lines(), 3)
	ll.Flush(log)
	lines := out.lines()
	require.Len(t, lines, 4)
	require.Contains(t, lines[3], "suppressed=97")
	require.Contains(t, lines[3], "last.from=")
	ll.Flush(log)
	require.Len(t, out.lines(), 4, "a flush with nothing counted writes nothing")
}
