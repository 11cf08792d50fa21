package launcher

// blamer decides which PE's failure ends a job, from what the launcher
// learns in the order it learns it: exits, the store's reports of lost
// PEs, and the ends of the waits it asked for. It does no I/O and keeps no
// clock: each method returns a verdict, which the launcher carries out
// (arming a timer, ending the job with a message), so every decision can
// be tested without processes.
//
// A PE that fails may be a consequence of another's failure: PEs that
// see a peer die report the loss and exit, often before the dead one's
// status reaches the launcher. So the cause is, in this order:
//
//  1. a PE killed by a signal (the launcher has sent none yet), the
//     first one the store reported lost if several were;
//  2. the PE the store reported lost first, once its exit status is in
//     (or lostWait has run out on it: it is still running);
//  3. the first PE that failed otherwise, once settleWait has brought
//     nothing earlier to light, or every PE has exited.
type blamer struct {
	pes       []blameFacts
	running   int   // PEs started and not yet exited
	failed    []int // ranks that failed, in the order the launcher learned it
	firstLost int   // the first rank the store reported lost, or -1
	blamed    int   // the cause, whose exit status is awaited, or -1
	settling  bool  // the settle wait is armed
	over      bool  // the job is ending, for this reason or another
}

// blameFacts is what decides whether a PE failed and how it is named.
type blameFacts struct {
	exited   bool
	code     int  // the status its exit implies
	signaled bool // a signal killed it
	said     bool // the verbose output told how it exited
	lost     bool // the store reported it lost
	failed   bool // in blamer.failed
}

// blameWhy says which message names the cause.
type blameWhy int

const (
	whyNone           blameWhy = iota
	whyLostRunning             // lost by the store, still running after lostWait
	whyFailedFirst             // failed; the verbose output said how just before
	whyExited                  // exited non-zero or by a signal
	whyZeroUnfinished          // exited 0 without finalizing
)

// verdict is what the launcher does after one fact: arm the settle wait,
// arm the lost wait of a rank, end the job blaming a rank, or nothing.
type verdict struct {
	settle bool     // arm settleWait, then call settled
	expire int      // arm lostWait for this rank, then call lostExpired; -1 for none
	blame  int      // end the job blaming this rank; -1 for none
	why    blameWhy // the message naming blame
	code   int      // the job's exit status when it ends
}

func newBlamer(n int) *blamer {
	return &blamer{pes: make([]blameFacts, n), firstLost: -1, blamed: -1}
}

func none() verdict { return verdict{expire: -1, blame: -1} }

// started counts a PE that runs.
func (b *blamer) started() { b.running++ }

// ended says the job is ending (a cause was found, here or elsewhere):
// nothing after it changes the verdict.
func (b *blamer) ended() { b.over = true }

// exit takes in rank's exit: code is the status it implies, said whether
// the verbose output has just told how it exited.
func (b *blamer) exit(rank, code int, signaled, said bool) verdict {
	p := &b.pes[rank]
	p.exited, p.code, p.signaled, p.said = true, code, signaled, said
	b.running--
	switch {
	case b.over:
		// Ending already; its status is a consequence, not a cause.
		return none()
	case rank == b.blamed:
		return b.blame(rank)
	case code != 0, p.lost && b.running > 0:
		// Non-zero, or 0 but without finalizing while others still run.
		return b.fail(rank)
	}
	return none()
}

// lost takes in the store's report that rank left without finalizing.
func (b *blamer) lost(rank int) verdict {
	p := &b.pes[rank]
	p.lost = true
	if b.firstLost < 0 {
		b.firstLost = rank
	}
	switch {
	case b.over:
		return none()
	case p.exited:
		// Its exit was seen first, with status 0 (else it has failed
		// already): it left without finalizing.
		if b.running > 0 {
			return b.fail(rank)
		}
		return none()
	}
	// Give its exit a moment to arrive, to name its status or signal.
	v := none()
	if len(b.failed) > 0 {
		v = b.decide(false)
	}
	v.expire = rank
	return v
}

// lostExpired is the end of rank's lost wait.
func (b *blamer) lostExpired(rank int) verdict {
	switch p := b.pes[rank]; {
	case p.exited || !p.lost || b.over:
		return none()
	case rank == b.blamed:
		return b.blame(rank)
	}
	return b.fail(rank)
}

// settled is the end of the settle wait: the best choice known is made.
func (b *blamer) settled() verdict {
	b.settling = false
	return b.decide(true)
}

// allExited is the verdict once every PE has exited without a cause
// found: what the store reported before the last exit still counts.
func (b *blamer) allExited() verdict { return b.decide(true) }

// fail records that rank failed: it exited non-zero or by a signal,
// exited 0 without finalizing, or was lost by the store and still runs.
// Whether it is the cause is decided with what else is known.
func (b *blamer) fail(rank int) verdict {
	if b.over {
		return none()
	}
	if p := &b.pes[rank]; !p.failed {
		p.failed = true
		b.failed = append(b.failed, rank)
	}
	return b.decide(false)
}

// decide chooses the cause, or waits for what would change the choice;
// force takes the best choice known.
func (b *blamer) decide(force bool) verdict {
	if b.over || b.blamed >= 0 || (len(b.failed) == 0 && b.firstLost < 0) {
		return none()
	}
	sig := -1
	for _, r := range b.failed {
		if b.pes[r].signaled && (sig < 0 || r == b.firstLost) {
			sig = r
		}
	}
	if sig >= 0 {
		return b.blame(sig)
	}
	if len(b.failed) == 0 {
		return none() // the store's report alone is not a failure yet: see lostWait
	}
	first := b.failed[0]
	if b.firstLost >= 0 {
		first = b.firstLost
		if !b.pes[first].exited {
			// Its exit names its status; lostWait bounds the wait.
			b.blamed = first
			if b.pes[first].failed {
				return b.blame(first) // lostWait has run out already
			}
			return none()
		}
	}
	if !force && b.running > 0 {
		v := none()
		if !b.settling {
			b.settling = true
			v.settle = true
		}
		return v
	}
	return b.blame(first)
}

// blame ends the job naming rank as its cause.
func (b *blamer) blame(rank int) verdict {
	b.over = true
	v := none()
	v.blame = rank
	switch p := b.pes[rank]; {
	case !p.exited:
		v.why, v.code = whyLostRunning, ExitLost
	case p.code != 0 && p.said:
		v.why, v.code = whyFailedFirst, p.code
	case p.code != 0:
		v.why, v.code = whyExited, p.code
	default:
		v.why, v.code = whyZeroUnfinished, ExitLost
	}
	return v
}
