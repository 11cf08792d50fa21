package bootstrap

import (
	"fmt"
	"slices"
	"time"
)

// ledger holds the store's decisions: who is a member, which collective
// each member is in, which rounds are running, and what a failure means
// for each of them. It does no I/O, keeps no clock and takes no lock: each
// event (a rank joins, contributes, leaves, is lost, goes silent, never
// comes) appends to an effects the Server carries out (queueing frames,
// closing a connection, emitting an Event), so every decision can be
// tested without sockets. The Server calls it with its mutex held.
//
// The failure rules, all here:
//
//   - The first member lost is the job's cause: every running and later
//     collective fails naming it, and a member that joins afterwards
//     hears of it at once.
//   - A lost member's peers are told, each once; a member that has
//     already left (finalized or lost) is not lost again.
//   - A finalized member lets the rounds it already entered complete;
//     every collective it did not enter fails naming it.
//   - A member whose contribution, or a result, would not fit a frame
//     fails the round for everyone.
type ledger struct {
	size    int
	state   []memberState
	seq     []uint64 // the next collective each member will enter
	inside  []bool   // the member has contributed to a round that has not ended
	entered []uint64 // collectives a finalized rank entered before leaving
	rounds  map[uint64]*round
	broken  *fail // the first loss: every later collective fails with it
	ended   int   // ranks finalized or lost
}

type memberState uint8

const (
	statePending memberState = iota
	stateActive
	stateFinalized
	stateLost
)

type round struct {
	parts    [][]byte
	arrived  int
	oversize int // first member whose contribution was too large, or -1
}

// msgKind is the frame a send carries.
type msgKind uint8

const (
	msgLost   msgKind = iota + 1 // LOST: msg.lost
	msgFail                      // FAIL: msg.fail
	msgResult                    // RESULT of round msg.seq: msg.parts
	msgAlive                     // ALIVE, announcing the store's DeadAfter
)

type message struct {
	kind  msgKind
	lost  lost
	fail  fail
	seq   uint64
	parts [][]byte
}

// send is one message for one or more members, encoded once.
type send struct {
	to  []int
	msg message
}

// effects is what the Server does after one or more ledger events, in
// order: the sends (each member's frames keep this order), the
// connections to close, the events to emit (Remote is the Server's to
// fill in) and the losses to log.
type effects struct {
	sends  []send
	closes []int
	events []Event
	logged []Event // losses the Server logs, after its lock is released
	done   bool    // every rank has now finalized or been lost
}

func (fx *effects) send(msg message, to ...int) {
	if len(to) > 0 {
		fx.sends = append(fx.sends, send{to: to, msg: msg})
	}
}

func newLedger(size int) *ledger {
	return &ledger{
		size:    size,
		state:   make([]memberState, size),
		seq:     make([]uint64, size),
		inside:  make([]bool, size),
		entered: make([]uint64, size),
		rounds:  map[uint64]*round{},
	}
}

// claimedRank is the rank a HELLO claims, or -1 if the job has no such rank.
func claimedRank(h hello, size int) int {
	if uint64(h.rank) < uint64(size) {
		return int(h.rank)
	}
	return -1
}

// checkHello says why an authenticated peer cannot join a job of size PEs
// as it asks, or nil.
func checkHello(h hello, size int) error {
	if uint64(h.size) != uint64(size) {
		return fmt.Errorf("job size mismatch: the store serves %d PEs, the peer expects %d", size, h.size)
	}
	if claimedRank(h, size) < 0 {
		return fmt.Errorf("rank %d out of range: the job has PEs 0..%d", h.rank, size-1)
	}
	return nil
}

// join admits rank, or says why it cannot join.
func (l *ledger) join(fx *effects, rank int) error {
	if st := l.state[rank]; st != statePending {
		what := map[memberState]string{stateActive: "is already a member",
			stateFinalized: "has already finalized", stateLost: "was lost"}[st]
		return fmt.Errorf("rank %d %s; a rank cannot join twice", rank, what)
	}
	l.state[rank] = stateActive
	// A member joining after another was lost hears of it at once.
	if l.broken != nil {
		fx.send(message{kind: msgLost, lost: lost{pe: uint32(l.broken.pe), reason: l.broken.reason}}, rank)
	}
	fx.events = append(fx.events, Event{Kind: EventJoined, Rank: rank})
	return nil
}

// gather records rank's contribution to its next collective and ends the
// round if it was the last one missing. An error is a protocol error of
// rank's.
func (l *ledger) gather(fx *effects, rank int, g gather) error {
	if g.seq != l.seq[rank] {
		return fmt.Errorf("collective %d out of order: expected %d", g.seq, l.seq[rank])
	}
	if l.inside[rank] {
		return fmt.Errorf("collective %d entered while %d is still running", g.seq, g.seq-1)
	}
	l.seq[rank]++
	if l.broken != nil {
		fx.send(message{kind: msgFail, fail: fail{seq: g.seq, pe: l.broken.pe, kind: failLost, reason: l.broken.reason}}, rank)
		return nil
	}
	for pe, st := range l.state {
		if st == stateFinalized && l.entered[pe] <= g.seq {
			fx.send(message{kind: msgFail, fail: finalizedFail(g.seq, pe)}, rank)
			return nil
		}
	}
	r := l.rounds[g.seq]
	if r == nil {
		r = &round{parts: make([][]byte, l.size), oversize: -1}
		l.rounds[g.seq] = r
	}
	r.parts[rank] = g.data
	r.arrived++
	l.inside[rank] = true
	if g.flags&gatherOversize != 0 && r.oversize < 0 {
		r.oversize = rank
	}
	if r.arrived < l.size {
		return nil
	}
	delete(l.rounds, g.seq)
	var msg message
	switch {
	case r.oversize >= 0:
		msg = message{kind: msgFail, fail: fail{seq: g.seq, pe: int32(r.oversize), kind: failTooLarge,
			reason: fmt.Sprintf("PE %d contributed more than the %d bytes a frame can carry", r.oversize, MaxFrame)}}
	case resultLen(r.parts) > MaxFrame:
		msg = message{kind: msgFail, fail: fail{seq: g.seq, pe: -1, kind: failTooLarge,
			reason: fmt.Sprintf("the contributions add up to %d bytes, more than the %d a frame can carry",
				resultLen(r.parts), MaxFrame)}}
	default:
		msg = message{kind: msgResult, seq: g.seq, parts: r.parts}
	}
	// Every rank contributed; those that finalized since are not told.
	to := make([]int, 0, l.size)
	for pe := range l.inside {
		l.inside[pe] = false
		if l.state[pe] == stateActive {
			to = append(to, pe)
		}
	}
	fx.send(msg, to...)
	return nil
}

func finalizedFail(seq uint64, pe int) fail {
	return fail{seq: seq, pe: int32(pe), kind: failFinalized,
		reason: "left the job (finalized) before this collective"}
}

// left takes in the end of rank's connection: reason is "" for a clean
// close and why otherwise. It reports whether the end counted (a member
// lost by report or by the Server's Lose has been counted out already).
func (l *ledger) left(fx *effects, rank int, reason string) bool {
	if l.state[rank] != stateActive {
		return false
	}
	if reason == "" {
		l.finalize(fx, rank)
	} else {
		l.lose(fx, rank, reason)
		fx.logged = append(fx.logged, Event{Kind: EventLost, Rank: rank, Reason: reason})
	}
	return true
}

// finalize records rank's clean departure. Rounds it already contributed
// to can still complete; those it never entered fail.
func (l *ledger) finalize(fx *effects, rank int) {
	l.state[rank] = stateFinalized
	l.entered[rank] = l.seq[rank]
	for _, seq := range l.roundSeqs() {
		if seq >= l.seq[rank] {
			l.failRound(fx, seq, finalizedFail(seq, rank))
		}
	}
	l.end(fx, Event{Kind: EventFinalized, Rank: rank})
}

// reported acts on reporter's report that pe is lost (its transport saw
// what the store cannot: a stopped process keeps its connection open). pe
// is lost as if its connection had ended, and its connection is closed,
// so that it too learns, should it run again.
func (l *ledger) reported(fx *effects, reporter, pe int, why string) {
	l.loseAndClose(fx, pe, fmt.Sprintf("PE %d reports it lost: %s", reporter, why), pe != reporter)
}

// loseAndClose loses rank for a reason seen outside the store (a report,
// a launcher that sees the process stopped), closing its connection if
// shut. A rank that has already left, or is out of range, is not lost.
func (l *ledger) loseAndClose(fx *effects, rank int, reason string, shut bool) {
	if rank < 0 || rank >= l.size || (l.state[rank] != stateActive && l.state[rank] != statePending) {
		return
	}
	l.lose(fx, rank, reason)
	if shut {
		fx.closes = append(fx.closes, rank)
	}
	fx.logged = append(fx.logged, Event{Kind: EventLost, Rank: rank, Reason: reason})
}

// lose records that rank vanished: everyone else is told, and every
// running and later collective fails naming the first loss.
func (l *ledger) lose(fx *effects, rank int, reason string) {
	l.state[rank] = stateLost
	if l.broken == nil {
		l.broken = &fail{pe: int32(rank), kind: failLost, reason: reason}
	}
	var to []int
	for pe, st := range l.state {
		if pe != rank && st == stateActive {
			to = append(to, pe)
		}
	}
	fx.send(message{kind: msgLost, lost: lost{pe: uint32(rank), reason: reason}}, to...)
	for _, seq := range l.roundSeqs() {
		l.failRound(fx, seq, fail{seq: seq, pe: l.broken.pe, kind: failLost, reason: l.broken.reason})
	}
	l.end(fx, Event{Kind: EventLost, Rank: rank, Reason: reason})
}

// roundSeqs lists the running rounds in order, so that the frames a
// failure sends do not depend on a map's order.
func (l *ledger) roundSeqs() []uint64 {
	seqs := make([]uint64, 0, len(l.rounds))
	for seq := range l.rounds {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs
}

// failRound tells every member waiting in round seq that it failed.
func (l *ledger) failRound(fx *effects, seq uint64, f fail) {
	delete(l.rounds, seq)
	var to []int
	for pe := range l.inside {
		if !l.inside[pe] || l.seq[pe] != seq+1 {
			continue
		}
		l.inside[pe] = false
		if l.state[pe] == stateActive {
			to = append(to, pe)
		}
	}
	fx.send(message{kind: msgFail, fail: f}, to...)
}

// end counts a rank out.
func (l *ledger) end(fx *effects, e Event) {
	l.ended++
	fx.done = fx.done || l.ended == l.size
	fx.events = append(fx.events, e)
}

// watch is one tick of the store's watch over its members: silence[r] is
// how long active member r has sent nothing. A member silent for deadAfter
// is lost (its process is stopped or its host unreachable) and its
// connection closed; the others are sent ALIVE.
func (l *ledger) watch(fx *effects, silence []time.Duration, deadAfter time.Duration) {
	for rank, st := range l.state {
		if st != stateActive {
			continue
		}
		if silence[rank] < deadAfter {
			fx.send(message{kind: msgAlive}, rank)
			continue
		}
		l.loseAndClose(fx, rank, fmt.Sprintf("sent the store nothing for %v (its process is stopped or its host unreachable)",
			silence[rank].Round(time.Millisecond)), true)
	}
}

// missing lists the ranks that have not joined.
func (l *ledger) missing() []int {
	var m []int
	for r, st := range l.state {
		if st == statePending {
			m = append(m, r)
		}
	}
	return m
}

// giveUp loses every rank that has not joined, for reason (where they
// were told to come), so the members that did join hear who never came.
func (l *ledger) giveUp(fx *effects, reason string) []int {
	m := l.missing()
	for _, r := range m {
		l.lose(fx, r, reason)
	}
	return m
}

// active counts the members joined and not yet gone.
func (l *ledger) active() int {
	n := 0
	for _, st := range l.state {
		if st == stateActive {
			n++
		}
	}
	return n
}
