package bootstrap

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
)

// Local is a member of a job whose PEs are goroutines of one process. Tests
// use it to run several PEs inside one test binary.
type Local struct {
	job    *localJob
	rank   int
	seq    int // collectives this member has entered
	closed bool
}

type localJob struct {
	mu     sync.Mutex
	size   int
	rounds map[int]*localRound
	left   []bool // member closed or was killed
	lost   atomic.Pointer[core.PeerLostError]
	broken bool // a loss was reported: every collective fails
}

type localRound struct {
	data    [][]byte
	arrived int
	readers int
	done    chan struct{}
	err     error
}

// NewLocal returns the n members of a new in-process job, indexed by rank.
func NewLocal(n int) []*Local {
	if n < 1 {
		panic(fmt.Sprintf("bootstrap: NewLocal(%d): a job needs at least one PE", n))
	}
	j := &localJob{size: n, rounds: map[int]*localRound{}, left: make([]bool, n)}
	out := make([]*Local, n)
	for i := range out {
		out[i] = &Local{job: j, rank: i}
	}
	return out
}

func (b *Local) Rank() int { return b.rank }
func (b *Local) Size() int { return b.job.size }

// Allgather implements core.Bootstrap.
func (b *Local) Allgather(data []byte) ([][]byte, error) {
	j := b.job
	j.mu.Lock()
	if b.closed {
		j.mu.Unlock()
		return nil, fmt.Errorf("bootstrap: allgather after close: %w", core.ErrClosed)
	}
	k := b.seq
	b.seq++
	r := j.rounds[k]
	if r == nil {
		r = &localRound{data: make([][]byte, j.size), done: make(chan struct{})}
		j.rounds[k] = r
		// A member that already left can never join this round.
		for pe, gone := range j.left {
			if gone && r.err == nil {
				r.err = j.goneErr(pe)
				close(r.done)
			}
		}
	}
	if j.broken && r.err == nil && r.arrived < j.size {
		r.err = j.lost.Load()
		close(r.done)
	}
	r.data[b.rank] = append([]byte(nil), data...)
	r.arrived++
	if r.arrived == j.size && r.err == nil {
		close(r.done)
	}
	j.mu.Unlock()

	<-r.done

	j.mu.Lock()
	defer j.mu.Unlock()
	r.readers++
	if r.readers == r.arrived && (r.arrived == j.size || r.err != nil) {
		delete(j.rounds, k)
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.data, nil
}

// Barrier implements core.Bootstrap.
func (b *Local) Barrier() error {
	_, err := b.Allgather(nil)
	return err
}

// Err implements core.Bootstrap.
func (b *Local) Err() error {
	if e := b.job.lost.Load(); e != nil {
		return e
	}
	return nil
}

// Close implements core.Bootstrap: the member leaves; collectives that
// still wait for it fail.
func (b *Local) Close() error {
	b.leave(nil)
	return nil
}

// Kill makes the member vanish as if its process died: the others' Err
// reports it lost and their pending collectives fail.
func (b *Local) Kill() {
	b.leave(&core.PeerLostError{PE: b.rank, Reason: "killed"})
}

// ReportLost implements core.LossReporter, as the store does for
// Client: the loss is the job's, and every collective not yet complete,
// and every later one, fails with it.
func (b *Local) ReportLost(e *core.PeerLostError) {
	if e == nil || e.PE < 0 || e.PE >= b.job.size {
		return
	}
	j := b.job
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lost.CompareAndSwap(nil, &core.PeerLostError{PE: e.PE, Reason: e.Reason})
	j.broken = true
	for _, r := range j.rounds {
		if r.err == nil && r.arrived < j.size {
			r.err = j.lost.Load()
			close(r.done)
		}
	}
}

func (b *Local) leave(lost *core.PeerLostError) {
	j := b.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	j.left[b.rank] = true
	if lost != nil {
		j.lost.CompareAndSwap(nil, lost)
	}
	for k, r := range j.rounds {
		if k >= b.seq && r.err == nil && r.arrived < j.size {
			r.err = j.goneErr(b.rank)
			close(r.done)
		}
	}
}

func (j *localJob) goneErr(pe int) error {
	if l := j.lost.Load(); l != nil && l.PE == pe {
		return l
	}
	return &core.PeerLostError{PE: pe, Reason: "left the job before this collective"}
}

var (
	_ core.Bootstrap    = (*Local)(nil)
	_ core.LossReporter = (*Local)(nil)
)
