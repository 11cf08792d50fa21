package shmem

import (
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/mem"
)

// Ptr returns the symmetric s as PE pe's copy, mapped into this process,
// for direct loads and stores (shmem_ptr); nil if the provider does not map
// pe's heap here or s is not symmetric. For this PE it returns s.
func Ptr[T Elem](c Ctx, s []T, pe int) []T {
	w := c.context().w
	n := len(s) * mem.SizeOf[T]()
	r, off, err := w.sym("ptr", mem.Addr(s), n)
	if err != nil || core.CheckPE(pe, w.npes) != nil {
		return nil
	}
	if pe == w.me {
		return s
	}
	if w.direct == nil {
		return nil
	}
	peer := w.direct.PeerBytes(pe, r)
	if len(peer) < off+n {
		return nil
	}
	return mem.Slice[T](peer[off : off+n])[:len(s):len(s)]
}

// TeamPtr is Ptr with pe a PE number of team t (shmem_team_ptr, OpenSHMEM
// 1.6): that member's copy of the symmetric s, mapped into this process,
// or nil where it is not mapped here, s is not symmetric, t is nil or pe
// is not one of its members.
func TeamPtr[T Elem](t *Team, s []T, pe int) []T {
	if t == nil || t.dead.Load() || core.CheckPE(pe, len(t.members)) != nil {
		return nil
	}
	return Ptr(t.w, s, t.members[pe])
}

// AddrAccessible reports whether s is symmetric, so that PE pe can reach
// it (shmem_addr_accessible).
func AddrAccessible[T Elem](c Ctx, s []T, pe int) bool {
	w := c.context().w
	_, _, err := w.sym("addr_accessible", mem.Addr(s), len(s)*mem.SizeOf[T]())
	return err == nil && core.CheckPE(pe, w.npes) == nil
}

// PEAccessible reports whether PE pe is part of the job and reachable
// (shmem_pe_accessible).
func (w *World) PEAccessible(pe int) bool {
	return core.CheckPE(pe, w.npes) == nil && w.boot.Err() == nil
}
