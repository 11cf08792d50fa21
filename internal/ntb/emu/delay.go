package emu

import (
	"runtime"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// Pacing never uses time.Sleep for short waits: the kernel's timers
// deliver a sleep of a microsecond after tens of microseconds. A wait
// spins for a few polls, then yields the CPU on every poll (to this
// process's goroutines and to other processes) until the deadline; only
// the part of a long wait that lies more than sleepSlack before the
// deadline is slept.
const (
	spinPolls  = 32
	sleepSlack = time.Millisecond
)

// waitUntil returns at or soon after t.
func waitUntil(t time.Time) {
	for i := 0; ; i++ {
		d := time.Until(t)
		switch {
		case d <= 0:
			return
		case d > 2*sleepSlack:
			time.Sleep(d - sleepSlack)
		case i < spinPolls:
		default:
			runtime.Gosched()
			sys.Yield()
		}
	}
}

// delay waits d from now; d <= 0 returns at once.
func delay(d time.Duration) {
	if d > 0 {
		waitUntil(time.Now().Add(d))
	}
}
