package hybrid

import (
	"errors"
	"fmt"
	"sync"

	"github.com/goshmem/goshmem/core"
)

// Every collective of the job's bootstrap that the composite runs on its
// own behalf or on behalf of the intra-host provider carries a tag as
// its first byte, so the PEs of one host can never take another host's
// step for theirs (see group).
const (
	tagGroup = 'S' // a collective of the intra-host provider
	tagAgree = 'H' // the composite's agreement after an intra-host step
)

// group is the bootstrap the intra-host provider opens with: the PEs of
// one host, numbered 0.. in the order of their job ranks. The Bootstrap
// contract has collectives over the whole job only, so a collective of the
// group is one of the job in which every host runs the same collective of
// its own group at once: every host's intra-host provider makes the same
// calls in the same order, and takes only its own members' parts.
//
// A host whose provider failed a step while the others did not leaves the
// sequence early and enters the composite's agreement (tagAgree); a PE
// that meets that tag in a group collective knows the step failed
// somewhere, breaks the group (every later group collective fails at once,
// without a round of the job) and its provider fails too, so every PE then
// reaches the agreement. Nobody waits for a round that will never come.
type group struct {
	parent  core.Bootstrap
	members []int // the job ranks of this host's PEs, ascending
	rank    int   // this PE's index in members

	mu     sync.Mutex
	broken error
}

func (g *group) Rank() int { return g.rank }
func (g *group) Size() int { return len(g.members) }

// Allgather implements core.Bootstrap over the job's bootstrap.
func (g *group) Allgather(data []byte) ([][]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.broken != nil {
		return nil, g.broken
	}
	all, err := g.parent.Allgather(append([]byte{tagGroup}, data...))
	if err != nil {
		g.broken = err
		return nil, err
	}
	out, err := groupParts(all, g.members)
	if err != nil {
		g.broken = err
		return nil, err
	}
	return out, nil
}

// groupParts decodes a group collective's round of the job: every PE's
// part must carry tagGroup, and the members' parts, untagged, are the
// group's result.
func groupParts(all [][]byte, members []int) ([][]byte, error) {
	for pe, m := range all {
		if len(m) == 0 || m[0] != tagGroup {
			return nil, fmt.Errorf("PE %d left the intra-host provider's collectives, having failed a step: %w", pe, core.ErrInvalid)
		}
	}
	out := make([][]byte, len(members))
	for i, pe := range members {
		if pe < 0 || pe >= len(all) {
			return nil, fmt.Errorf("member PE %d of a job of %d: %w", pe, len(all), core.ErrInvalid)
		}
		out[i] = all[pe][1:]
	}
	return out, nil
}

// Barrier implements core.Bootstrap.
func (g *group) Barrier() error {
	_, err := g.Allgather(nil)
	return err
}

// Err implements core.Bootstrap: a PE lost anywhere in the job ends the
// intra-host provider's waits too.
func (g *group) Err() error { return g.parent.Err() }

// Close implements core.Bootstrap. The job's bootstrap is not the
// group's to close.
func (g *group) Close() error { return nil }

// agreeBoot is the job's bootstrap as the composite's agreement after an
// intra-host step sees it: a round in which some PE still runs the step
// (tagGroup) is repeated until every PE has given up or finished it.
type agreeBoot struct{ parent core.Bootstrap }

func (a agreeBoot) Rank() int    { return a.parent.Rank() }
func (a agreeBoot) Size() int    { return a.parent.Size() }
func (a agreeBoot) Err() error   { return a.parent.Err() }
func (a agreeBoot) Close() error { return nil }
func (a agreeBoot) Barrier() error {
	_, err := a.Allgather(nil)
	return err
}

// maxCatchUp bounds the rounds of one agreement: a PE still in a group
// collective when the others agree breaks its group there and agrees in
// the next round, so one round more always suffices.
const maxCatchUp = 2

func (a agreeBoot) Allgather(data []byte) ([][]byte, error) {
	msg := append([]byte{tagAgree}, data...)
	for range maxCatchUp + 1 {
		all, err := a.parent.Allgather(msg)
		if err != nil {
			return nil, err
		}
		if out, ok := agreeParts(all); ok {
			return out, nil
		}
	}
	return nil, errors.New("hybrid: PEs out of step after an intra-host step")
}

// agree makes err, the outcome of an intra-host step on this PE, the
// job's (see group).
func agree(parent core.Bootstrap, err error) error {
	return core.Agree(agreeBoot{parent}, err)
}

// agreeParts decodes an agreement's round: the parts, untagged, if every
// PE's carries tagAgree; not ok if some PE is still in a group step.
func agreeParts(all [][]byte) ([][]byte, bool) {
	for _, m := range all {
		if len(m) == 0 || m[0] != tagAgree {
			return nil, false
		}
	}
	out := make([][]byte, len(all))
	for pe, m := range all {
		out[pe] = m[1:]
	}
	return out, true
}
