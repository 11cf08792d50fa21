package shmem

import (
	"fmt"

	"github.com/goshmem/goshmem/core"
)

// Ctx is what RMA, atomic and ordering operations are issued on: a *World
// (its default context) or a *Context.
type Ctx interface {
	context() *Context
}

// Context is an independent stream of operations (shmem_ctx_t): its own
// endpoint and completion counter, so its Quiet completes only its own
// operations (Dinan and Flajslik, "Contexts: A Mechanism for High
// Throughput Communication in OpenSHMEM").
type Context struct {
	w       *World
	ep      core.Endpoint
	team    *Team   // nil for World contexts
	session session // a session under way (session.go)
}

func (c *Context) context() *Context { return c }
func (w *World) context() *Context   { return &w.def }

// ContextOptions are the spec's context options.
type ContextOptions struct {
	Serialized bool // SHMEM_CTX_SERIALIZED: never used by two goroutines at once
	Private    bool // SHMEM_CTX_PRIVATE: used only by the creating goroutine
	NoStore    bool // SHMEM_CTX_NOSTORE: no puts or non-fetching AMOs through it; they fail
}

// NewContext creates a context (shmem_ctx_create). It is local, not
// collective. Destroy it when done; Finalize destroys those left.
func (w *World) NewContext(opts ContextOptions) (*Context, error) {
	if err := w.Err(); err != nil {
		return nil, err
	}
	return w.newContext(opts, nil)
}

// newContext creates a context with its own endpoint; a team context
// addresses PEs by their rank in team.
func (w *World) newContext(opts ContextOptions, team *Team) (*Context, error) {
	ep, err := w.dom.NewEndpoint(core.EndpointOptions{Serialized: opts.Serialized, Private: opts.Private, NoStore: opts.NoStore})
	if err != nil {
		return nil, fmt.Errorf("shmem: new context: %w", err)
	}
	c := &Context{w: w, ep: ep, team: team}
	if team != nil {
		c.ep = &teamEndpoint{ep: c.ep, t: team}
	}
	if opts.NoStore {
		c.ep = noStoreEndpoint{ep: c.ep}
	}
	w.ctxMu.Lock()
	w.contexts[c] = struct{}{}
	if team != nil {
		team.contexts[c] = struct{}{}
	}
	w.ctxMu.Unlock()
	return c, nil
}

// Destroy quiets the context and releases it (shmem_ctx_destroy).
// Destroying the World's default context is not allowed; destroying the
// nil (invalid) context does nothing.
func (c *Context) Destroy() error {
	if c == nil {
		return nil
	}
	if c == &c.w.def {
		return fmt.Errorf("shmem: destroy of the default context: %w", core.ErrInvalid)
	}
	c.w.ctxMu.Lock()
	_, live := c.w.contexts[c]
	delete(c.w.contexts, c)
	if c.team != nil {
		delete(c.team.contexts, c)
	}
	c.w.ctxMu.Unlock()
	if !live {
		return nil
	}
	return c.ep.Close()
}

// Team is the team the context was created on (shmem_ctx_get_team): for
// the World's default context and for contexts from NewContext, which
// address PEs by their World rank, that is TeamWorld; for the nil
// (invalid) context it is the nil team.
func (c *Context) Team() *Team {
	if c == nil {
		return nil // the invalid context has the invalid team
	}
	if c.team == nil {
		return c.w.TeamWorld()
	}
	return c.team
}

// World is the World the context belongs to, nil for the nil context.
func (c *Context) World() *World {
	if c == nil {
		return nil
	}
	return c.w
}

// Quiet returns when every put, get and atomic issued on this context is
// complete (shmem_ctx_quiet).
func (c *Context) Quiet() error {
	if c == nil {
		return invalidCtx("ctx_quiet")
	}
	return c.ep.Quiet()
}

// Fence orders this context's puts and atomics to each PE: those issued
// before it complete at their target before those issued after it
// (shmem_ctx_fence).
func (c *Context) Fence() error {
	if c == nil {
		return invalidCtx("ctx_fence")
	}
	return c.ep.Fence()
}

// PEQuiet returns when every put, atomic, put-with-signal and
// non-blocking get issued on this context to the PEs pes is complete and
// visible to every PE (shmem_ctx_pe_quiet, OpenSHMEM 1.6). PE numbers are
// those the context's operations take: the team's, for a team's context.
// An empty list completes nothing. Where the provider has CapPEQuiet
// (core.PEQuieter: tcp, ntbring, loopback, and their composite) it waits
// for the listed PEs alone, so a slow PE outside the list does not hold
// it up; elsewhere it completes every operation of the context, as Quiet.
func (c *Context) PEQuiet(pes ...int) error {
	if c == nil {
		return invalidCtx("ctx_pe_quiet")
	}
	return c.peQuiet("ctx_pe_quiet", pes)
}

// PEQuiet is PEQuiet on the default context (shmem_pe_quiet).
func (w *World) PEQuiet(pes ...int) error { return w.def.peQuiet("pe_quiet", pes) }

func (c *Context) peQuiet(op string, pes []int) error {
	if len(pes) == 0 {
		return nil
	}
	n := c.w.npes
	if c.team != nil {
		n = len(c.team.members)
	}
	for i, pe := range pes {
		if err := core.CheckPE(pe, n); err != nil {
			return fmt.Errorf("shmem: %s: target_pes[%d]: %w", op, i, err)
		}
	}
	return core.QuietPEs(c.ep, pes)
}

// Quiet is Quiet on the default context (shmem_quiet).
func (w *World) Quiet() error { return w.def.ep.Quiet() }

// Fence is Fence on the default context (shmem_fence).
func (w *World) Fence() error { return w.def.ep.Fence() }

// noStoreEndpoint is the endpoint of a NoStore context: it refuses the
// stores the option promised not to issue. Like teamEndpoint it holds the
// provider's endpoint and implements the whole contract, so no store added
// to it slips through.
type noStoreEndpoint struct{ ep core.Endpoint }

var (
	_ core.Endpoint   = noStoreEndpoint{}
	_ core.PEQuieter  = noStoreEndpoint{}
	_ core.Batcher    = noStoreEndpoint{}
	_ core.BlockMover = noStoreEndpoint{}
)

func noStore(op string) error {
	return fmt.Errorf("shmem: %s on a context created with NoStore, which allows only gets and fetching atomics: %w", op, core.ErrInvalid)
}

func (noStoreEndpoint) Put(int, core.Region, int, []byte) error    { return noStore("put") }
func (noStoreEndpoint) PutNBI(int, core.Region, int, []byte) error { return noStore("put_nbi") }
func (noStoreEndpoint) PutValue(int, core.Region, int, uint64, int) error {
	return noStore("put")
}
func (noStoreEndpoint) Atomic(int, core.Region, int, core.AtomicOp, core.AtomicType, uint64) error {
	return noStore("non-fetching atomic")
}
func (noStoreEndpoint) PutBlocks(int, core.Region, int, []byte, core.Blocks) error {
	return noStore("strided or blocked put")
}
func (noStoreEndpoint) PutSignal(int, core.Region, int, []byte, core.Region, int, core.AtomicOp, uint64) error {
	return noStore("put_signal")
}

func (e noStoreEndpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	return e.ep.Get(pe, r, off, dst)
}
func (e noStoreEndpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	return e.ep.GetValue(pe, r, off, size)
}
func (e noStoreEndpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	return e.ep.GetNBI(pe, r, off, dst)
}
func (e noStoreEndpoint) GetBlocks(pe int, r core.Region, off int, dst []byte, b core.Blocks) error {
	return core.GetBlocks(e.ep, pe, r, off, dst, b)
}
func (e noStoreEndpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	return e.ep.FetchAtomic(pe, r, off, op, t, operand, compare)
}
func (e noStoreEndpoint) Fence() error             { return e.ep.Fence() }
func (e noStoreEndpoint) Quiet() error             { return e.ep.Quiet() }
func (e noStoreEndpoint) QuietPEs(pes []int) error { return core.QuietPEs(e.ep, pes) }
func (e noStoreEndpoint) StartBatch(ops int)       { core.StartBatch(e.ep, ops) }
func (e noStoreEndpoint) StopBatch() error         { return core.StopBatch(e.ep) }
func (e noStoreEndpoint) Counter() *core.Counter   { return e.ep.Counter() }
func (e noStoreEndpoint) Close() error             { return e.ep.Close() }
