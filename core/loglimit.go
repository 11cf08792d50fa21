package core

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// LogLimit bounds how many lines one kind of message writes, for
// messages a stranger can cause at will (a connection refused, a
// handshake failed): logging each would let anyone who can reach a port
// fill the log. In every Interval the first Burst lines are written in
// full; the rest are counted, and the count is written as one line with
// the next message after the interval, or by Flush. The zero LogLimit
// writes 10 lines a minute.
//
// A LogLimit must not be copied after first use.
type LogLimit struct {
	Burst    int           // lines in full per interval; 0 means 10
	Interval time.Duration // 0 means a minute

	mu         sync.Mutex
	start      time.Time // of the current interval
	n          int       // lines written in it
	suppressed int       // lines counted since the last summary
	since      time.Time // of the first of those
	last       []any     // attributes of the last counted line
	msg        string
	level      slog.Level
}

// Log writes msg with args to l at level, or counts it once this
// interval's lines are spent.
func (ll *LogLimit) Log(l *slog.Logger, level slog.Level, msg string, args ...any) {
	if l == nil || !l.Enabled(context.Background(), level) {
		return
	}
	burst, every := ll.Burst, ll.Interval
	if burst <= 0 {
		burst = 10
	}
	if every <= 0 {
		every = time.Minute
	}
	now := time.Now()
	ll.mu.Lock()
	var summary func()
	if now.Sub(ll.start) >= every {
		summary = ll.takeLocked(l, now)
		ll.start, ll.n = now, 0
	}
	write := ll.n < burst
	if write {
		ll.n++
	} else {
		if ll.suppressed == 0 {
			ll.since = now
		}
		ll.suppressed++
		ll.msg, ll.last, ll.level = msg, args, level
	}
	ll.mu.Unlock()
	if summary != nil {
		summary()
	}
	if write {
		l.Log(context.Background(), level, msg, args...)
	}
}

// Warn is Log at slog.LevelWarn.
func (ll *LogLimit) Warn(l *slog.Logger, msg string, args ...any) {
	ll.Log(l, slog.LevelWarn, msg, args...)
}

// Flush writes the count of lines not written yet, if any; owners call
// it as they close, so no count is lost.
func (ll *LogLimit) Flush(l *slog.Logger) {
	if l == nil {
		return
	}
	ll.mu.Lock()
	summary := ll.takeLocked(l, time.Now())
	ll.mu.Unlock()
	if summary != nil {
		summary()
	}
}

// takeLocked resets the count and returns the function writing it, nil
// when there is nothing to write. The caller writes after unlocking:
// a handler may block.
func (ll *LogLimit) takeLocked(l *slog.Logger, now time.Time) func() {
	if ll.suppressed == 0 {
		return nil
	}
	n, since, msg, last, level := ll.suppressed, ll.since, ll.msg, ll.last, ll.level
	ll.suppressed, ll.last = 0, nil
	return func() {
		l.Log(context.Background(), level, msg+" (more, not logged one by one)",
			"suppressed", n, "over", now.Sub(since).Round(time.Millisecond), slog.Group("last", last...))
	}
}
