package shmem

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Team is an ordered set of PEs that run collectives together
// (shmem_team_t). Team ranks run from 0 to NPEs()-1; Member(r) is the
// World PE of rank r. Every World has TeamWorld and TeamShared; others come
// from splitting a team, collectively over it.
//
// A team's collectives must be called by all its members in the same
// order, by one goroutine at a time on each PE.
type Team struct {
	w       *World
	members []int // World PE of each team rank
	me      int   // this PE's rank
	slot    int   // its slot in the internal heap
	config  TeamConfig
	shape   *hostShape // nil: the combining tree is flat (see coll_hosts.go)

	msgGen uint64
	// gatherGen counts the World's gather-bank collectives (gatherReduce,
	// stage), at seenOff in the slot after seen.
	gatherGen *uint64

	// g is the team as its collectives' group; seen holds what each of
	// the slot's words has counted, ever (see group), at seenOff in the
	// slot.
	g    group
	seen *[gwWords]uint64

	// The host-aware collectives' (coll_hosts.go, coll_hostdata.go).
	heard uint64   // blocks heard of in host-aware gathers, ever
	at    []int    // scratch: where each rank's block begins in dest
	sizes []uint64 // scratch: Collect's element counts

	contexts map[*Context]struct{} // guarded by w.ctxMu
	dead     atomic.Bool           // destroyed

	// op is the routine of the team's last collective, which its waits
	// report (doing.go); set by check, as no two collectives of one team
	// run at once.
	op string
}

// TeamConfig is the configuration a team is created with
// (shmem_team_config_t).
type TeamConfig struct {
	// NumContexts is how many contexts the program means to create on the
	// team; it is recorded and reported by Config.
	NumContexts int
}

// TeamWorld is the team of every PE, in World order (SHMEM_TEAM_WORLD).
func (w *World) TeamWorld() *Team { return w.coll.world }

// TeamShared is the team of the PEs on this PE's host, in World order
// (SHMEM_TEAM_SHARED): those whose memory this PE may share.
func (w *World) TeamShared() *Team { return w.coll.shared }

// MyPE is this PE's rank in the team (shmem_team_my_pe), or -1 for a nil
// team: what a split gives the PEs it leaves out.
func (t *Team) MyPE() int {
	if t == nil {
		return -1
	}
	return t.me
}

// NPEs is the number of PEs in the team (shmem_team_n_pes), or -1 for a
// nil team.
func (t *Team) NPEs() int {
	if t == nil {
		return -1
	}
	return len(t.members)
}

// Config is the configuration the team was created with, the zero
// TeamConfig for the nil team; GetConfig (shmem_team_get_config) also
// says when the team is invalid.
func (t *Team) Config() TeamConfig {
	if t == nil {
		return TeamConfig{}
	}
	return t.config
}

// World is the World the team belongs to, nil for the nil team.
func (t *Team) World() *World {
	if t == nil {
		return nil
	}
	return t.w
}

// Member returns the World PE of team rank r, or -1 if r is not a rank of
// the team; a nil team has no ranks.
func (t *Team) Member(r int) int {
	if t == nil || r < 0 || r >= len(t.members) {
		return -1
	}
	return t.members[r]
}

// Translate returns the rank in dest of the PE whose rank in src is pe, or
// -1 if that PE is not in dest or pe is not a rank of src
// (shmem_team_translate_pe).
func Translate(src *Team, pe int, dest *Team) int {
	if src == nil || dest == nil {
		return -1
	}
	wpe := src.Member(pe)
	if wpe < 0 {
		return -1
	}
	return dest.rankOf(wpe)
}

// rankOf is the team rank of World PE wpe, or -1.
func (t *Team) rankOf(wpe int) int {
	for r, m := range t.members {
		if m == wpe {
			return r
		}
	}
	return -1
}

// initTeams creates TeamWorld and TeamShared, collectively.
func (c *collectives) initTeams(hostID string) error {
	w := c.w
	all := make([]int, w.npes)
	for i := range all {
		all[i] = i
	}
	c.world = newTeam(w, all, 0, TeamConfig{})
	c.slots[0] = c.world
	hosts, err := w.boot.Allgather([]byte(hostID))
	if err != nil {
		return err
	}
	local := sameHost(hosts, w.me)
	c.shared = newTeam(w, local, 1, TeamConfig{})
	c.slots[1] = c.shared
	if c.hostMap != nil {
		if len(c.hostMap) != w.npes {
			return fmt.Errorf("a host map of %d PEs for a job of %d: one host per PE is needed: %w", len(c.hostMap), w.npes, core.ErrInvalid)
		}
		hosts = posedHosts(c.hostMap)
	}
	if err := c.initHosts(hosts); err != nil {
		return err
	}
	c.world.shapeHosts()
	return nil
}

// newTeam is the team of World PEs members, this PE among them, in slot.
func newTeam(w *World, members []int, slot int, config TeamConfig) *Team {
	t := &Team{w: w, members: members, me: indexOf(members, w.me), slot: slot, config: config, contexts: map[*Context]struct{}{}}
	t.g = group{w: w, team: t, n: len(members), me: t.me, syncR: w.heap, sync: t.base() + wordsOff}
	t.g.local = w.local[t.g.sync : t.g.sync+groupWordsSize]
	own := mem.Slice[uint64](w.local[t.base()+seenOff : t.base()+seenOff+int(gwWords+1)*8])
	t.seen, t.gatherGen = (*[gwWords]uint64)(own), &own[gwWords]
	return t
}

// sameHost returns, in order, the PEs whose host id is PE me's.
func sameHost(hosts [][]byte, me int) []int {
	var local []int
	for pe, h := range hosts {
		if string(h) == string(hosts[me]) {
			local = append(local, pe)
		}
	}
	return local
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// SplitStrided creates, collectively over t, the team of t's ranks start,
// start+stride, ..., size of them (shmem_team_split_strided). stride may be
// negative; it may be zero only when size is 1. Every member of t calls it
// with the same arguments; PEs not in the new team get nil and no error.
func (t *Team) SplitStrided(start, stride, size int, config TeamConfig) (*Team, error) {
	if err := t.check("team split_strided"); err != nil {
		return nil, err
	}
	if err := t.checkStrided(start, stride, size); err != nil {
		return nil, err
	}
	var members []int
	for i := 0; i < size; i++ {
		members = append(members, t.members[start+i*stride])
	}
	if indexOf(members, t.w.me) < 0 {
		members = nil
	}
	return t.split("split_strided", members, config)
}

// checkStrided checks the triplet as 1.6 bounds it: size from 1 to the
// team's, stride 0 only with size 1, and every rank start + i*stride
// inside the team, without wrapping around.
func (t *Team) checkStrided(start, stride, size int) error {
	n := len(t.members)
	if size > 1 && (stride > n-1 || stride < -(n-1)) {
		// Past the team at i = 1 already; checked first, so that
		// (size-1)*stride below cannot overflow.
		return fmt.Errorf("shmem: team split_strided: stride %d steps past the team's %d PEs: with size %d, a stride is from %d to %d: %w",
			stride, n, size, -(n - 1), n-1, core.ErrInvalid)
	}
	last := start + (size-1)*stride
	switch {
	case size < 1 || size > n:
		return fmt.Errorf("shmem: team split_strided: size %d is not from 1 to the team's %d PEs: %w", size, n, core.ErrInvalid)
	case start < 0 || start >= n:
		return fmt.Errorf("shmem: team split_strided: start %d is not a rank of the team (0 to %d): %w", start, n-1, core.ErrInvalid)
	case stride == 0 && size > 1:
		return fmt.Errorf("shmem: team split_strided: stride 0 names rank %d %d times; a zero stride needs size 1: %w", start, size, core.ErrInvalid)
	case last < 0 || last >= n:
		return fmt.Errorf("shmem: team split_strided: start %d, stride %d and size %d reach rank %d, outside the team's 0 to %d: %w",
			start, stride, size, last, n-1, core.ErrInvalid)
	}
	return nil
}

// Split2D splits t, collectively, into a grid of xrange columns
// (shmem_team_split_2d): xteam is this PE's row (ranks r with the same
// r / xrange) and yteam its column (ranks with the same r % xrange). A last
// row may be short.
func (t *Team) Split2D(xrange int, xconfig, yconfig TeamConfig) (xteam, yteam *Team, err error) {
	if err := t.check("team split_2d"); err != nil {
		return nil, nil, err
	}
	n := len(t.members)
	if xrange < 1 {
		return nil, nil, fmt.Errorf("shmem: team split_2d: xrange %d is not positive: %w", xrange, core.ErrInvalid)
	}
	xrange = min(xrange, n)
	row := t.me / xrange * xrange
	x := slices.Clone(t.members[row:min(row+xrange, n)])
	var y []int
	for r := t.me % xrange; r < n; r += xrange {
		y = append(y, t.members[r])
	}
	if xteam, err = t.split("split_2d", x, xconfig); err != nil {
		return nil, nil, err
	}
	if yteam, err = t.split("split_2d", y, yconfig); err != nil {
		return nil, nil, errors.Join(err, xteam.Destroy())
	}
	return xteam, yteam, nil
}

// split creates a team, collectively over t: members are the World PEs of
// this PE's new team, in rank order, or nil if it joins none. Every PE of t
// contributes the slots it uses, so all agree on the lowest slot free on
// every one of them; teams with no PE in common may share a slot.
func (t *Team) split(op string, members []int, config TeamConfig) (*Team, error) {
	c := &t.w.coll
	var used [maxTeams / 64]uint64
	c.teamMu.Lock()
	for i, s := range c.slots {
		if s != nil {
			used[i/64] |= 1 << (i % 64)
		}
	}
	c.teamMu.Unlock()
	if err := OrReduce(t, used[:], used[:]); err != nil {
		return nil, fmt.Errorf("shmem: team %s: %w", op, err)
	}
	slot := -1
	for i, u := range used {
		if u != ^uint64(0) {
			slot = i*64 + bits.TrailingZeros64(^u)
			break
		}
	}
	if members == nil {
		return nil, nil
	}
	if slot < 0 {
		return nil, &TeamLimitError{Max: maxTeams}
	}
	nt := newTeam(t.w, members, slot, config)
	nt.shapeHosts()
	c.teamMu.Lock()
	c.slots[slot] = nt
	c.teamMu.Unlock()
	return nt, nil
}

// Destroy releases the team, collectively over its members, and destroys
// the contexts created on it (shmem_team_destroy). TeamWorld and
// TeamShared cannot be destroyed. Destroying a nil or destroyed team does
// nothing.
func (t *Team) Destroy() error {
	if t == nil {
		return nil
	}
	c := &t.w.coll
	if t == c.world || t == c.shared {
		return fmt.Errorf("shmem: team destroy: the predefined teams live as long as the World: %w", core.ErrInvalid)
	}
	if t.dead.Load() {
		return nil
	}
	err := t.destroyContexts()
	// Once every member has passed this barrier nobody signals through the
	// slot, so it can be cleared for the next team.
	if serr := t.barrier(); serr != nil {
		return fmt.Errorf("shmem: team destroy: %w", serr)
	}
	t.clearSlot()
	c.teamMu.Lock()
	t.dead.Store(true)
	c.slots[t.slot] = nil
	c.teamMu.Unlock()
	return err
}

// check refuses collectives on a nil or destroyed team.
func (t *Team) check(op string) error {
	if t == nil {
		return fmt.Errorf("shmem: %s: nil team (this PE is not a member): %w", op, core.ErrInvalid)
	}
	if t.dead.Load() {
		return fmt.Errorf("shmem: %s: team was destroyed: %w", op, core.ErrClosed)
	}
	t.op = op
	return t.w.Err()
}
