package bootstrap

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An event the store learns, in a ledger table's script.
type ledgerStep struct {
	do   string // "join", "gather", "left", "report", "lose", "watch", "giveup"
	rank int    // the member; for "report" the reporter
	pe   int    // for "report": the PE reported
	seq  uint64 // for "gather"
	over bool   // for "gather": the contribution was too large
	why  string // the reason for "left" ("" a clean close), "report", "lose", "giveup"
	// for "watch": how long each rank has been silent, against deadAfter
	silence []time.Duration
	// what the store does: the sends ("lost(3)->0,1"), closes ("close 3"),
	// events ("lost 3: why") and "done", in that order, or "error: ..."
	want []string
}

func joins(ranks ...int) []ledgerStep {
	var s []ledgerStep
	for _, r := range ranks {
		s = append(s, ledgerStep{do: "join", rank: r, want: []string{fmt.Sprintf("joined %d", r)}})
	}
	return s
}

func enter(rank int, seq uint64, want ...string) ledgerStep {
	return ledgerStep{do: "gather", rank: rank, seq: seq, want: want}
}

func script(parts ...any) []ledgerStep {
	var s []ledgerStep
	for _, p := range parts {
		switch p := p.(type) {
		case ledgerStep:
			s = append(s, p)
		case []ledgerStep:
			s = append(s, p...)
		}
	}
	return s
}

// describe renders what the ledger decided, in the order the Server
// carries it out.
func describe(fx *effects, err error) []string {
	var out []string
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	for _, sd := range fx.sends {
		var what string
		switch m := sd.msg; m.kind {
		case msgLost:
			what = fmt.Sprintf("lost(%d)", m.lost.pe)
		case msgFail:
			kind := map[byte]string{failLost: "lost", failFinalized: "finalized", failTooLarge: "too large"}[m.fail.kind]
			what = fmt.Sprintf("fail(%d, pe %d %s)", m.fail.seq, m.fail.pe, kind)
		case msgResult:
			what = fmt.Sprintf("result(%d)", m.seq)
		case msgAlive:
			what = "alive"
		}
		to := make([]string, len(sd.to))
		for i, r := range sd.to {
			to[i] = fmt.Sprint(r)
		}
		out = append(out, what+"->"+strings.Join(to, ","))
	}
	for _, r := range fx.closes {
		out = append(out, fmt.Sprintf("close %d", r))
	}
	for _, e := range fx.events {
		s := fmt.Sprintf("%s %d", e.Kind, e.Rank)
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		out = append(out, s)
	}
	if fx.done {
		out = append(out, "done")
	}
	return out
}

const crashed = "connection closed without finalizing (the process exited or crashed)"

// Each case is what the store's tests provoke with processes and sockets
// (kills, clean closes, reports, the launcher's Lose, silence, ranks that
// never come), as the events reach the store, and what it does after each.
func TestLedgerTable(t *testing.T) {
	const deadAfter = time.Second
	cases := []struct {
		name  string
		npes  int
		steps []ledgerStep
	}{
		{"a round completes for everyone, in any order of arrival", 3, script(joins(0, 1, 2),
			enter(2, 0), enter(0, 0), enter(1, 0, "result(0)->0,1,2"),
			enter(0, 1), enter(1, 1), enter(2, 1, "result(1)->0,1,2"))},
		{"a crash fails the waiting round and every later one (lost member fails others)", 4, script(joins(0, 1, 2, 3),
			enter(0, 0), enter(1, 0), enter(2, 0), enter(3, 0, "result(0)->0,1,2,3"),
			enter(0, 1), enter(1, 1),
			ledgerStep{do: "left", rank: 3, why: crashed,
				want: []string{"lost(3)->0,1,2", "fail(1, pe 3 lost)->0,1", "lost 3: " + crashed}},
			enter(2, 1, "fail(1, pe 3 lost)->2"),
			enter(0, 2, "fail(2, pe 3 lost)->0"))},
		{"a loss after a round completed does not undo it", 3, script(joins(0, 1, 2),
			enter(0, 0), enter(1, 0), enter(2, 0, "result(0)->0,1,2"),
			ledgerStep{do: "left", rank: 1, why: crashed, want: []string{"lost(1)->0,2", "lost 1: " + crashed}})},
		{"the first loss is the cause of every later failure", 3, script(joins(0, 1, 2),
			enter(0, 0),
			ledgerStep{do: "left", rank: 2, why: "protocol error: x",
				want: []string{"lost(2)->0,1", "fail(0, pe 2 lost)->0", "lost 2: protocol error: x"}},
			ledgerStep{do: "left", rank: 1, why: crashed, want: []string{"lost(1)->0", "lost 1: " + crashed}},
			enter(0, 1, "fail(1, pe 2 lost)->0"))},
		{"a finalized member fails the collectives it did not enter, and is not lost", 3, script(joins(0, 1, 2),
			enter(0, 0), enter(1, 0), enter(2, 0, "result(0)->0,1,2"),
			ledgerStep{do: "left", rank: 2, want: []string{"finalized 2"}},
			enter(0, 1, "fail(1, pe 2 finalized)->0"),
			enter(1, 1, "fail(1, pe 2 finalized)->1"))},
		{"a member that entered and then finalized lets the round complete", 2, script(joins(0, 1),
			enter(1, 0),
			ledgerStep{do: "left", rank: 1, want: []string{"finalized 1"}},
			enter(0, 0, "result(0)->0"))},
		{"finalizing fails a round waiting for the finalized member", 3, script(joins(0, 1, 2),
			enter(0, 0), enter(1, 0),
			ledgerStep{do: "left", rank: 2, want: []string{"fail(0, pe 2 finalized)->0,1", "finalized 2"}})},
		{"a reported member is lost for everyone, once, and its connection closed", 4, script(joins(0, 1, 2, 3),
			enter(0, 0), enter(1, 0), enter(2, 0),
			ledgerStep{do: "report", rank: 0, pe: 3, why: "the left link went down", want: []string{
				"lost(3)->0,1,2", "fail(0, pe 3 lost)->0,1,2", "close 3", "lost 3: PE 0 reports it lost: the left link went down"}},
			ledgerStep{do: "report", rank: 1, pe: 3, why: "again"},
			ledgerStep{do: "left", rank: 3, why: crashed},
			ledgerStep{do: "left", rank: 0, want: []string{"finalized 0"}},
			ledgerStep{do: "left", rank: 1, want: []string{"finalized 1"}},
			ledgerStep{do: "left", rank: 2, want: []string{"finalized 2", "done"}})},
		{"a member that reports itself is lost, its connection left to it", 2, script(joins(0, 1),
			ledgerStep{do: "report", rank: 1, pe: 1, why: "my link", want: []string{
				"lost(1)->0", "lost 1: PE 1 reports it lost: my link"}})},
		{"a report of a finalized member changes nothing", 2, script(joins(0, 1),
			ledgerStep{do: "left", rank: 1, want: []string{"finalized 1"}},
			ledgerStep{do: "report", rank: 0, pe: 1, why: "gone"})},
		{"the launcher's Lose: out of range or again changes nothing", 3, script(joins(0, 1, 2),
			enter(0, 0),
			ledgerStep{do: "lose", rank: -1, why: "nobody"},
			ledgerStep{do: "lose", rank: 3, why: "nobody"},
			ledgerStep{do: "lose", rank: 1, why: "its process has been stopped", want: []string{
				"lost(1)->0,2", "fail(0, pe 1 lost)->0", "close 1", "lost 1: its process has been stopped"}},
			ledgerStep{do: "lose", rank: 1, why: "again"},
			enter(2, 0, "fail(0, pe 1 lost)->2"))},
		{"a rank that has not joined can be lost, and then cannot join", 2, script(joins(0),
			ledgerStep{do: "lose", rank: 1, why: "stopped", want: []string{"lost(1)->0", "close 1", "lost 1: stopped"}},
			ledgerStep{do: "join", rank: 1, want: []string{"error: rank 1 was lost; a rank cannot join twice"}})},
		{"a silent member is lost; the others are sent ALIVE", 3, script(joins(0, 1, 2),
			ledgerStep{do: "watch", silence: []time.Duration{0, deadAfter / 2, 0},
				want: []string{"alive->0", "alive->1", "alive->2"}},
			enter(0, 0),
			ledgerStep{do: "watch", silence: []time.Duration{0, deadAfter + 1234567*time.Nanosecond, 0}, want: []string{
				"alive->0", "lost(1)->0,2", "fail(0, pe 1 lost)->0", "alive->2", "close 1",
				"lost 1: sent the store nothing for 1.001s (its process is stopped or its host unreachable)"}},
			ledgerStep{do: "watch", silence: []time.Duration{0, 2 * deadAfter, 0},
				want: []string{"alive->0", "alive->2"}})},
		{"ranks that never joined are given up, and those that did hear it", 3, script(joins(0, 1),
			enter(0, 0),
			ledgerStep{do: "giveup", why: "never joined the store at h:1", want: []string{
				"lost(2)->0,1", "fail(0, pe 2 lost)->0", "lost 2: never joined the store at h:1"}})},
		{"a member that joins after a loss hears of it at once", 3, script(joins(0, 2),
			ledgerStep{do: "left", rank: 2, why: crashed, want: []string{"lost(2)->0", "lost 2: " + crashed}},
			ledgerStep{do: "join", rank: 1, want: []string{"lost(2)->1", "joined 1"}},
			enter(1, 0, "fail(0, pe 2 lost)->1"))},
		{"a rank cannot join twice", 2, script(joins(0),
			ledgerStep{do: "join", rank: 0, want: []string{"error: rank 0 is already a member; a rank cannot join twice"}},
			ledgerStep{do: "left", rank: 0, want: []string{"finalized 0"}},
			ledgerStep{do: "join", rank: 0, want: []string{"error: rank 0 has already finalized; a rank cannot join twice"}})},
		{"an oversize contribution fails the round for every member", 3, script(joins(0, 1, 2),
			enter(0, 0), ledgerStep{do: "gather", rank: 1, over: true}, enter(2, 0, "fail(0, pe 1 too large)->0,1,2"),
			enter(0, 1), enter(1, 1), enter(2, 1, "result(1)->0,1,2"))},
		{"collectives out of order are the member's protocol error", 2, script(joins(0, 1),
			enter(0, 1, "error: collective 1 out of order: expected 0"),
			enter(0, 0),
			enter(0, 1, "error: collective 1 entered while 0 is still running"))},
		{"a member that breaks the protocol is lost", 2, script(joins(0, 1),
			ledgerStep{do: "left", rank: 1, why: "protocol error: unexpected HELLO frame from a member",
				want: []string{"lost(1)->0", "lost 1: protocol error: unexpected HELLO frame from a member"}})},
		{"the store is done once every rank has left", 2, script(joins(0, 1),
			ledgerStep{do: "left", rank: 1, why: crashed, want: []string{"lost(1)->0", "lost 1: " + crashed}},
			ledgerStep{do: "left", rank: 0, want: []string{"finalized 0", "done"}})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(tc.npes)
			for i, st := range tc.steps {
				var fx effects
				var err error
				switch st.do {
				case "join":
					err = l.join(&fx, st.rank)
				case "gather":
					var flags byte
					if st.over {
						flags = gatherOversize
					}
					err = l.gather(&fx, st.rank, gather{seq: st.seq, flags: flags, data: []byte{byte(st.rank)}})
				case "left":
					l.left(&fx, st.rank, st.why)
				case "report":
					l.reported(&fx, st.rank, st.pe, st.why)
				case "lose":
					l.loseAndClose(&fx, st.rank, st.why, true)
				case "watch":
					l.watch(&fx, st.silence, deadAfter)
				case "giveup":
					l.giveUp(&fx, st.why)
				default:
					t.Fatalf("step %d: unknown %q", i, st.do)
				}
				require.Equal(t, st.want, describe(&fx, err), "step %d: %s %d", i, st.do, st.rank)
			}
		})
	}
}

// Every loss the ledger decides is logged once; a clean close is not.
func TestLedgerLogsEachLoss(t *testing.T) {
	l := newLedger(3)
	var fx effects
	for r := range 3 {
		require.NoError(t, l.join(&fx, r))
	}
	l.left(&fx, 0, "")
	l.left(&fx, 1, crashed)
	l.loseAndClose(&fx, 2, "stopped", true)
	l.loseAndClose(&fx, 2, "again", true)
	require.Equal(t, []Event{{Kind: EventLost, Rank: 1, Reason: crashed}, {Kind: EventLost, Rank: 2, Reason: "stopped"}}, fx.logged)
	require.True(t, fx.done)
	require.Equal(t, 0, l.active())
}

func TestCheckHello(t *testing.T) {
	for _, tc := range []struct {
		h       hello
		claimed int
		err     string
	}{
		{hello{rank: 1, size: 3}, 1, ""},
		{hello{rank: 1, size: 4}, 1, "job size mismatch: the store serves 3 PEs, the peer expects 4"},
		{hello{rank: 3, size: 3}, -1, "rank 3 out of range: the job has PEs 0..2"},
		{hello{rank: 1 << 31, size: 3}, -1, "rank 2147483648 out of range: the job has PEs 0..2"},
	} {
		require.Equal(t, tc.claimed, claimedRank(tc.h, 3))
		if err := checkHello(tc.h, 3); tc.err == "" {
			require.NoError(t, err)
		} else {
			require.EqualError(t, err, tc.err)
		}
	}
}
