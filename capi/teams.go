package main

/*
#include <stdlib.h>
#include "handles.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/goshmem/goshmem/shmem"
)

// handleRegistry remembers the C halves of the teams and contexts the
// program created, so that destroying a team can release its contexts'
// Go halves, and shmem_finalize can mark those left over as dead: a later
// call on one then says it came after shmem_finalize instead of touching
// a finalized World.
type handleRegistry struct {
	sync.Mutex
	ctxs  map[*C.struct_gsh_ctx]*ctxEntry
	teams map[*C.struct_gsh_team]struct{}
}

var handles = handleRegistry{ctxs: map[*C.struct_gsh_ctx]*ctxEntry{}, teams: map[*C.struct_gsh_team]struct{}{}}

// forget releases every handle the program left behind at finalize.
func (r *handleRegistry) forget() {
	r.Lock()
	defer r.Unlock()
	for x := range r.ctxs {
		cgo.Handle(x.h).Delete()
		x.h = 0
	}
	for x := range r.teams {
		cgo.Handle(x.h).Delete()
		x.h = 0
	}
	clear(r.ctxs)
	clear(r.teams)
}

// debugf reports, under SHMEM_DEBUG, why a routine that returns an error
// code failed; the code itself is what the program is told.
func debugf(fn *C.char, err error) {
	if debugOn() {
		fmt.Fprintf(os.Stderr, "goshmem: %s: %v\n", C.GoString(fn), err)
	}
}

// fillTeam makes x the C half of t: the ranks C answers questions about
// without calling Go. A team whose world PEs are evenly spaced (every
// strided split of an evenly spaced team) is described by start and
// stride; any other by a table.
func fillTeam(x *C.struct_gsh_team, t *shmem.Team) {
	n := t.NPEs()
	x.h = C.uintptr_t(cgo.NewHandle(t))
	x.my_pe, x.n_pes = C.int(t.MyPE()), C.int(n)
	x.start, x.stride = C.int(t.Member(0)), 0
	if n > 1 {
		x.stride = C.int(t.Member(1) - t.Member(0))
	}
	for r := range n {
		if t.Member(r) != int(x.start)+r*int(x.stride) {
			m := unsafe.Slice((*C.int)(C.calloc(C.size_t(n), C.sizeof_int)), n)
			for i := range n {
				m[i] = C.int(t.Member(i))
			}
			x.members = &m[0]
			break
		}
	}
	x.config.num_contexts = C.int(t.Config().NumContexts)
}

// gshgo_team_split_strided is shmem_team_split_strided. It returns 0 with
// out filled, 0 with out->h zero when this PE is not in the new team, or
// nonzero when the team could not be created.
//
//export gshgo_team_split_strided
func gshgo_team_split_strided(parent *C.struct_gsh_team, start, stride, size, nctx C.int, out *C.struct_gsh_team, fn *C.char) C.int {
	t := teamOf(parent, fn)
	if t == nil {
		return 1
	}
	nt, err := t.SplitStrided(int(start), int(stride), int(size), shmem.TeamConfig{NumContexts: int(nctx)})
	if err != nil {
		debugf(fn, err)
		return 1
	}
	if nt != nil {
		fillTeam(out, nt)
		handles.add(out)
	}
	return 0
}

// gshgo_team_split_2d is shmem_team_split_2d, with split_strided's
// results for each of the two teams.
//
//export gshgo_team_split_2d
func gshgo_team_split_2d(parent *C.struct_gsh_team, xrange, xctx, yctx C.int, xout, yout *C.struct_gsh_team, fn *C.char) C.int {
	t := teamOf(parent, fn)
	if t == nil {
		return 1
	}
	xt, yt, err := t.Split2D(int(xrange), shmem.TeamConfig{NumContexts: int(xctx)}, shmem.TeamConfig{NumContexts: int(yctx)})
	if err != nil {
		debugf(fn, err)
		return 1
	}
	if xt != nil {
		fillTeam(xout, xt)
		handles.add(xout)
	}
	if yt != nil {
		fillTeam(yout, yt)
		handles.add(yout)
	}
	return 0
}

func (r *handleRegistry) add(x *C.struct_gsh_team) {
	r.Lock()
	r.teams[x] = struct{}{}
	r.Unlock()
}

// gshgo_team_destroy is shmem_team_destroy's Go half: it destroys the
// team and the contexts created on it, and releases their handles; the
// C side then frees the structs.
//
//export gshgo_team_destroy
func gshgo_team_destroy(x *C.struct_gsh_team, fn *C.char) {
	t := teamOf(x, fn)
	if x.h == C.gsh_team_world.h || x.h == C.gsh_team_shared.h {
		failf(fn, "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed")
	}
	check(fn, t.Destroy())
	h := cgo.Handle(x.h)
	handles.Lock()
	for c, e := range handles.ctxs {
		if e.team == h {
			cgo.Handle(c.h).Delete()
			c.h = 0
			delete(handles.ctxs, c)
		}
	}
	delete(handles.teams, x)
	handles.Unlock()
	h.Delete()
	x.h = 0
}

// ctxOptions maps SHMEM_CTX_* bits to the Go options.
func ctxOptions(o C.long) (shmem.ContextOptions, error) {
	known := C.long(C.SHMEM_CTX_SERIALIZED | C.SHMEM_CTX_PRIVATE | C.SHMEM_CTX_NOSTORE)
	if o&^known != 0 {
		return shmem.ContextOptions{}, fmt.Errorf("unknown context options %#x", int64(o&^known))
	}
	return shmem.ContextOptions{
		Serialized: o&C.SHMEM_CTX_SERIALIZED != 0,
		Private:    o&C.SHMEM_CTX_PRIVATE != 0,
		NoStore:    o&C.SHMEM_CTX_NOSTORE != 0,
	}, nil
}

// gshgo_ctx_create is shmem_ctx_create (team nil) and
// shmem_team_create_ctx. It fills out's handle and returns 0, or returns
// nonzero when the context could not be created.
//
//export gshgo_ctx_create
func gshgo_ctx_create(team *C.struct_gsh_team, options C.long, out *C.struct_gsh_ctx, fn *C.char) C.int {
	w := theWorld(fn)
	opts, err := ctxOptions(options)
	if err != nil {
		debugf(fn, err)
		return 1
	}
	var c *shmem.Context
	var th cgo.Handle
	if team == nil || team.h == C.gsh_team_world.h {
		c, err = w.NewContext(opts)
	} else {
		c, err = teamOf(team, fn).CreateCtx(opts)
		th = cgo.Handle(team.h)
	}
	if err != nil {
		debugf(fn, err)
		return 1
	}
	e := &ctxEntry{c: c, q: c, team: th}
	out.h = C.uintptr_t(cgo.NewHandle(e))
	handles.Lock()
	handles.ctxs[out] = e
	handles.Unlock()
	return 0
}

// gshgo_ctx_destroy is shmem_ctx_destroy's Go half.
//
//export gshgo_ctx_destroy
func gshgo_ctx_destroy(x *C.struct_gsh_ctx, fn *C.char) {
	e := ctxOf(x, fn)
	if x.h == C.gsh_ctx_default.h {
		failf(fn, "SHMEM_CTX_DEFAULT cannot be destroyed")
	}
	c, ok := e.c.(*shmem.Context)
	if !ok {
		failf(fn, "not a context shmem_ctx_create made")
	}
	check(fn, c.Destroy())
	handles.Lock()
	delete(handles.ctxs, x)
	handles.Unlock()
	cgo.Handle(x.h).Delete()
	x.h = 0
}

// gshgo_team_sync is shmem_team_sync.
//
//export gshgo_team_sync
func gshgo_team_sync(x *C.struct_gsh_team, fn *C.char) C.int {
	t := teamOf(x, fn)
	if t == nil {
		return 1
	}
	check(fn, t.Sync())
	return 0
}

var errInvalidTeam = errors.New("the team is SHMEM_TEAM_INVALID")
