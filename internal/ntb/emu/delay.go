package emu

import (
	"runtime"
	"time"
)

// Pacing never sleeps for short waits: the kernel's timers deliver a sleep
// of a microsecond after tens of microseconds, and on a loaded host a
// sched_yield can lose the CPU for a whole time slice. A wait polls the
// clock a few times, then yields to the process's other goroutines on
// every poll until the deadline; only the part of a long wait that lies
// more than sleepSlack before the deadline is slept.
const (
	spinPolls  = 32
	sleepSlack = 80 * time.Microsecond
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
		case i >= spinPolls:
			runtime.Gosched()
		}
	}
}

// delay waits d from now; d <= 0 returns at once.
func delay(d time.Duration) {
	if d > 0 {
		waitUntil(time.Now().Add(d))
	}
}
