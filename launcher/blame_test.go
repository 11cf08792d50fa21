package launcher

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A fact the launcher learns, in a blame table's script.
type fact struct {
	kind     string // "exit", "lost", "expired", "settled", "all" (every PE exited), "ended"
	rank     int
	code     int
	signaled bool
	said     bool
}

func exitOf(rank, code int) fact { return fact{kind: "exit", rank: rank, code: code} }
func killed(rank, sig int) fact {
	return fact{kind: "exit", rank: rank, code: 128 + sig, signaled: true}
}
func lostBy(rank int) fact           { return fact{kind: "lost", rank: rank} }
func expiredOn(rank int) fact        { return fact{kind: "expired", rank: rank} }
func told(f fact) fact               { f.said = true; return f }
func kindOf(kind string) fact        { return fact{kind: kind} }
func (f fact) String() string        { return fmt.Sprintf("%s(%d, %d)", f.kind, f.rank, f.code) }
func (v verdict) armed() (bool, int) { return v.settle, v.expire }

// Each case is what the kill, stop and exit tests of the launcher provoke
// with processes, as the facts reach the launcher, and the verdict after
// each: the waits armed and, at the end, who is blamed with which message
// and status.
func TestBlameTable(t *testing.T) {
	type step struct {
		f      fact
		settle bool // the settle wait is armed
		expire int  // the lost wait of this rank is armed, or -1
	}
	cases := []struct {
		name  string
		npes  int
		steps []step
		blame int // -1: nobody
		why   blameWhy
		code  int
	}{
		{"every PE finalizes", 3, []step{
			{exitOf(0, 0), false, -1}, {exitOf(1, 0), false, -1}, {exitOf(2, 0), false, -1}, {kindOf("all"), false, -1},
		}, -1, whyNone, 0},
		{"a failure waits for an earlier one, then is blamed", 3, []step{
			{exitOf(1, 3), true, -1}, {kindOf("settled"), false, -1},
		}, 1, whyExited, 3},
		{"the settle wait is armed once", 3, []step{
			{exitOf(1, 3), true, -1}, {exitOf(2, 4), false, -1}, {kindOf("settled"), false, -1},
		}, 1, whyExited, 3},
		{"the last exit decides without waiting", 2, []step{
			{exitOf(1, 3), true, -1}, {exitOf(0, 1), false, -1},
		}, 1, whyExited, 3},
		{"a signal is the cause at once, over an earlier failure", 3, []step{
			{exitOf(1, 1), true, -1}, {killed(0, 9), false, -1},
		}, 0, whyExited, 137},
		{"a signal is the cause, though another PE was lost first", 3, []step{
			{lostBy(2), false, 2}, {killed(1, 9), false, -1},
		}, 1, whyExited, 137},
		{"the lost PE's own signal", 3, []step{
			{lostBy(2), false, 2}, {killed(2, 9), false, -1},
		}, 2, whyExited, 137},
		{"the PE lost first is blamed once its status is in", 3, []step{
			{lostBy(2), false, 2}, {exitOf(0, 1), false, -1}, {killed(2, 9), false, -1},
		}, 2, whyExited, 137},
		{"the PE lost first, still running after the lost wait", 3, []step{
			{lostBy(2), false, 2}, {exitOf(0, 1), false, -1}, {expiredOn(2), false, -1},
		}, 2, whyLostRunning, ExitLost},
		{"a lost PE alone, still running after the lost wait (stopped)", 3, []step{
			{lostBy(1), false, 1}, {expiredOn(1), false, -1},
		}, 1, whyLostRunning, ExitLost},
		{"a lost PE that exits 0 before its wait ends", 3, []step{
			{lostBy(1), false, 1}, {exitOf(1, 0), true, -1}, {expiredOn(1), false, -1}, {kindOf("settled"), false, -1},
		}, 1, whyZeroUnfinished, ExitLost},
		{"exit 0 without finalizing, the store's report after", 3, []step{
			{exitOf(1, 0), false, -1}, {lostBy(1), true, -1}, {kindOf("settled"), false, -1},
		}, 1, whyZeroUnfinished, ExitLost},
		{"the last PE may leave without finalizing", 2, []step{
			{exitOf(0, 0), false, -1}, {exitOf(1, 0), false, -1}, {lostBy(1), false, -1}, {kindOf("all"), false, -1},
		}, -1, whyNone, 0},
		{"the verbose output said how it exited", 3, []step{
			{told(exitOf(2, 5)), true, -1}, {kindOf("settled"), false, -1},
		}, 2, whyFailedFirst, 5},
		{"a lost report after a failure decides again", 3, []step{
			{exitOf(0, 1), true, -1}, {lostBy(2), false, 2}, {killed(2, 15), false, -1},
		}, 2, whyExited, 143},
		{"nothing counts once the job is ending", 3, []step{
			{kindOf("ended"), false, -1}, {killed(0, 9), false, -1}, {lostBy(1), false, -1}, {exitOf(1, 1), false, -1},
			{expiredOn(1), false, -1}, {kindOf("settled"), false, -1}, {kindOf("all"), false, -1},
		}, -1, whyNone, 0},
		{"a lost wait that ends after the exit changes nothing", 2, []step{
			{lostBy(1), false, 1}, {killed(1, 9), false, -1}, {expiredOn(1), false, -1},
		}, 1, whyExited, 137},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBlamer(c.npes)
			for range c.npes {
				b.started()
			}
			got := none()
			for i, s := range c.steps {
				var v verdict
				switch f := s.f; f.kind {
				case "exit":
					v = b.exit(f.rank, f.code, f.signaled, f.said)
				case "lost":
					v = b.lost(f.rank)
				case "expired":
					v = b.lostExpired(f.rank)
				case "settled":
					v = b.settled()
				case "all":
					v = b.allExited()
				case "ended":
					b.ended()
					v = none()
				}
				settle, expire := v.armed()
				require.Equal(t, s.settle, settle, "step %d (%v): settle wait armed", i, s.f)
				require.Equal(t, s.expire, expire, "step %d (%v): lost wait armed", i, s.f)
				if v.blame >= 0 {
					require.Equal(t, -1, got.blame, "step %d (%v): blamed twice", i, s.f)
					got = v
				}
			}
			require.Equal(t, c.blame, got.blame, "blamed")
			require.Equal(t, c.why, got.why, "message")
			require.Equal(t, c.code, got.code, "status")
		})
	}
}
