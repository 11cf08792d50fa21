package bootstrap

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockedBuf is a log destination safe for the server's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A stranger hammering the store's port with bad connections writes a
// few warnings and a count, not a line per connection.
func TestRejectionsDoNotFloodTheLog(t *testing.T) {
	const hammer = 200
	var logs lockedBuf
	ts := startStore(t, 2, testSecret, func(s *Server) {
		s.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	for range hammer {
		c, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		require.NoError(t, c.SetReadDeadline(time.Now().Add(watchdog)))
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the store kept a stranger's connection open")
		c.Close()
	}
	ts.events.waitCount(t, EventRejected, hammer)
	// Close waits for every connection's goroutine, so every line is
	// written, and writes the count of those not written one by one.
	require.NoError(t, ts.srv.Close())
	// Every rejection is either a line of its own or in a count; the
	// lines are few (10 a minute, then a count).
	var lines, counted int
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(l, "rejected connection") {
			continue
		}
		lines++
		if _, n, ok := strings.Cut(l, "suppressed="); ok {
			k, err := strconv.Atoi(strings.Fields(n)[0])
			require.NoError(t, err, l)
			counted += k
		} else {
			counted++
		}
	}
	require.Equal(t, hammer, counted, "rejections lost from the log:\n%s", logs.String())
	require.LessOrEqual(t, lines, 25, "a warning per connection:\n%s", logs.String())
}
