package shmem

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/core"
)

// CreateCtx creates a context on the team (shmem_team_create_ctx): its
// operations name PEs by their rank in the team. It is local, not
// collective. Destroying the team destroys its contexts.
func (t *Team) CreateCtx(opts ContextOptions) (*Context, error) {
	if err := t.check("team create_ctx"); err != nil {
		return nil, err
	}
	return t.w.newContext(opts, t)
}

// destroyContexts destroys the contexts created on the team.
func (t *Team) destroyContexts() error {
	t.w.ctxMu.Lock()
	ctxs := make([]*Context, 0, len(t.contexts))
	for c := range t.contexts {
		ctxs = append(ctxs, c)
	}
	t.w.ctxMu.Unlock()
	var errs []error
	for _, c := range ctxs {
		errs = append(errs, c.Destroy())
	}
	return errors.Join(errs...)
}

// teamEndpoint is the endpoint of a team context: it translates team ranks
// into World PEs before the provider sees them. It holds the provider's
// endpoint rather than embedding it and implements every operation of
// the contract, so an operation added to core.Endpoint cannot reach the
// provider untranslated.
type teamEndpoint struct {
	ep core.Endpoint
	t  *Team
}

var (
	_ core.Endpoint   = (*teamEndpoint)(nil)
	_ core.PEQuieter  = (*teamEndpoint)(nil)
	_ core.Batcher    = (*teamEndpoint)(nil)
	_ core.BlockMover = (*teamEndpoint)(nil)
)

func (e *teamEndpoint) pe(op string, r int) (int, error) {
	if r < 0 || r >= len(e.t.members) {
		return 0, fmt.Errorf("shmem: %s on a team context: PE %d is not a rank of the team (0 to %d): %w",
			op, r, len(e.t.members)-1, core.ErrInvalid)
	}
	return e.t.members[r], nil
}

func (e *teamEndpoint) Put(pe int, r core.Region, off int, src []byte) error {
	p, err := e.pe("put", pe)
	if err != nil {
		return err
	}
	return e.ep.Put(p, r, off, src)
}

func (e *teamEndpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	p, err := e.pe("get", pe)
	if err != nil {
		return err
	}
	return e.ep.Get(p, r, off, dst)
}

func (e *teamEndpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	p, err := e.pe("put", pe)
	if err != nil {
		return err
	}
	return e.ep.PutValue(p, r, off, v, size)
}

func (e *teamEndpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	p, err := e.pe("get", pe)
	if err != nil {
		return 0, err
	}
	return e.ep.GetValue(p, r, off, size)
}

func (e *teamEndpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	p, err := e.pe("put_nbi", pe)
	if err != nil {
		return err
	}
	return e.ep.PutNBI(p, r, off, src)
}

func (e *teamEndpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	p, err := e.pe("get_nbi", pe)
	if err != nil {
		return err
	}
	return e.ep.GetNBI(p, r, off, dst)
}

func (e *teamEndpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	p, err := e.pe("atomic", pe)
	if err != nil {
		return err
	}
	return e.ep.Atomic(p, r, off, op, t, operand)
}

func (e *teamEndpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	p, err := e.pe("fetch_atomic", pe)
	if err != nil {
		return 0, err
	}
	return e.ep.FetchAtomic(p, r, off, op, t, operand, compare)
}

// PutSignal keeps the provider's own put-with-signal, one operation where
// it has CapPutSignal, on a team context too.
func (e *teamEndpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	p, err := e.pe("put_signal", pe)
	if err != nil {
		return err
	}
	return e.ep.PutSignal(p, r, off, src, sigR, sigOff, op, operand)
}

func (e *teamEndpoint) Fence() error           { return e.ep.Fence() }
func (e *teamEndpoint) Quiet() error           { return e.ep.Quiet() }
func (e *teamEndpoint) Counter() *core.Counter { return e.ep.Counter() }
func (e *teamEndpoint) Close() error           { return e.ep.Close() }

// QuietPEs keeps the provider's per-PE quiet (core.PEQuieter) on a team
// context: the team ranks become World PEs, and a provider without one
// quiets everything.
func (e *teamEndpoint) QuietPEs(pes []int) error {
	var buf [8]int
	world := buf[:0]
	for _, r := range pes {
		p, err := e.pe("pe_quiet", r)
		if err != nil {
			return err
		}
		world = append(world, p)
	}
	return core.QuietPEs(e.ep, world)
}

// StartBatch and StopBatch keep the provider's batches (core.Batcher) on a
// team context: a session's batch does what it does on any other.
func (e *teamEndpoint) StartBatch(ops int) { core.StartBatch(e.ep, ops) }
func (e *teamEndpoint) StopBatch() error   { return core.StopBatch(e.ep) }

// PutBlocks and GetBlocks keep the provider's blocked moves
// (core.BlockMover) on a team context: one operation where the provider
// makes it one.
func (e *teamEndpoint) PutBlocks(pe int, r core.Region, off int, src []byte, b core.Blocks) error {
	p, err := e.pe("ibput", pe)
	if err != nil {
		return err
	}
	return core.PutBlocks(e.ep, p, r, off, src, b)
}

func (e *teamEndpoint) GetBlocks(pe int, r core.Region, off int, dst []byte, b core.Blocks) error {
	p, err := e.pe("ibget", pe)
	if err != nil {
		return err
	}
	return core.GetBlocks(e.ep, p, r, off, dst, b)
}
