package shmem

import (
	"math"
	"sync"

	"github.com/goshmem/goshmem/core"
)

// SessionOptions are the options of a communication session
// (shmem_ctx_session_start, OpenSHMEM 1.6), combined with |.
type SessionOptions int64

// SessionBatch (SHMEM_CTX_SESSION_BATCH) says the context will issue a
// batch: a series of small puts, put-with-signals and non-fetching
// atomics that may each wait a little so that they travel together.
const SessionBatch SessionOptions = 1 << 0

// SessionConfig holds a session's configuration (shmem_ctx_session_config_t).
// Only the fields a SessionMask names are read.
type SessionConfig struct {
	// TotalOps is the number of RMA and atomic calls the program expects
	// within the session; math.MaxUint64 (SIZE_MAX), the default, says
	// nothing.
	TotalOps uint64
}

// SessionMask says which of a SessionConfig's fields a session takes.
type SessionMask int64

// SessionTotalOps (SHMEM_CTX_SESSION_TOTAL_OPS) takes TotalOps.
const SessionTotalOps SessionMask = 1 << 0

// session is a context's session state.
type session struct {
	mu       sync.Mutex
	active   bool
	opts     SessionOptions
	totalOps uint64
	batching bool // the endpoint is in a batch (core.Batcher)
}

// SessionStart begins a session on the context (shmem_ctx_session_start):
// hints, which change no operation's completion or order. With
// SessionBatch, a provider that can (core.Batcher, CapBatch: tcp) holds
// the context's small puts and non-fetching atomics back briefly so that
// a batch of them leaves in fewer writes, until SessionStop, a quiet, or
// a short bound; elsewhere a session does nothing, and costs nothing. A
// session under way takes the new options as well (they are ORed) and the
// fields mask names from cfg; cfg may be nil, which like a mask of 0
// keeps the defaults. Options and mask bits that 1.6 does not define are
// ignored, as the specification has every combination allowed. On the
// nil (invalid) context it does nothing.
func (c *Context) SessionStart(opts SessionOptions, cfg *SessionConfig, mask SessionMask) error {
	if c == nil {
		return nil
	}
	s := &c.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		s.active, s.opts, s.totalOps = true, 0, math.MaxUint64
	}
	s.opts |= opts
	if cfg != nil && mask&SessionTotalOps != 0 {
		s.totalOps = cfg.TotalOps
	}
	if s.opts&SessionBatch != 0 {
		ops := 0
		if s.totalOps <= math.MaxInt32 {
			ops = int(s.totalOps)
		}
		s.batching = core.StartBatch(c.ep, ops)
	}
	return nil
}

// SessionStop ends the context's session (shmem_ctx_session_stop): what
// a batch held back leaves now. Without a session under way, and on the
// nil (invalid) context, it does nothing.
func (c *Context) SessionStop() error {
	if c == nil {
		return nil
	}
	s := &c.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		return nil
	}
	s.active, s.opts = false, 0
	if s.batching {
		s.batching = false
		return core.StopBatch(c.ep)
	}
	return nil
}

// SessionStart is SessionStart on the default context.
func (w *World) SessionStart(opts SessionOptions, cfg *SessionConfig, mask SessionMask) error {
	return w.def.SessionStart(opts, cfg, mask)
}

// SessionStop is SessionStop on the default context.
func (w *World) SessionStop() error { return w.def.SessionStop() }
