package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "fast.h"
*/
import "C"

import (
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/shmem"
)

// gshgo_fast_map is the Go half of gsh_fast_init: it hands the C fast
// path the World's shared map (the provider's, forwarded by shmem), or
// nothing when the provider offers none, so that C moves data to mapped
// PEs itself (fast.h). The addresses are the provider's mappings, valid
// until Finalize, which gsh_fast_fini precedes.
//
//export gshgo_fast_map
func gshgo_fast_map() {
	w := world.Load()
	if w == nil {
		return
	}
	m := w.SharedMap()
	if m == nil {
		return
	}

	proto := C.CString(m.Protocol)
	defer C.free(unsafe.Pointer(proto))
	if C.gsh_fast_begin(C.int(w.NPEs()), C.int(w.MyPE()), cbool(m.WritersFence), proto, C.int(m.Version)) != 0 {
		return
	}
	for pe, ctl := range m.Control {
		if C.gsh_fast_add_ctl(C.int(pe), unsafe.Pointer(unsafe.SliceData(ctl)), C.size_t(len(ctl))) != 0 {
			C.gsh_fast_abort()
			return
		}
	}
	peers := make([]C.uintptr_t, w.NPEs())
	for _, s := range m.Segments {
		for pe, p := range s.Peers {
			peers[pe] = C.uintptr_t(p + uintptr(s.Start))
		}
		key := uint64(s.Index)<<C.GSH_LOOP_OFF_BITS | uint64(s.Start)
		if C.gsh_fast_add_seg(C.uintptr_t(s.Base+uintptr(s.Start)), C.uintptr_t(s.End-s.Start), C.uint64_t(key),
			unsafe.SliceData(peers)) != 0 {
			C.gsh_fast_abort()
			return
		}
	}
	C.gsh_fast_set_push(C.size_t(shmem.BroadcastPushMax), C.int(shmem.BroadcastPushMembers))
	C.gsh_fast_commit()
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// gshgo_fast_check ends the job if the World is broken (a PE lost, a
// global exit, Finalize, a PE that finalized instead of joining the
// barrier), and reports a long wait: the fast path's barrier asks between
// its sleeps, having waited waitedNS, as the provider's barrier checks
// between its own (World.BarrierWait).
//
//export gshgo_fast_check
func gshgo_fast_check(fn *C.char, waitedNS C.longlong) {
	if err := theWorld(fn).BarrierWait(C.GoString(fn), time.Duration(waitedNS)); err != nil {
		fail(fn, err)
	}
}

// gshgo_fast_done tells the World that the fast path's barrier, which
// slept, has ended (World.BarrierDone).
//
//export gshgo_fast_done
func gshgo_fast_done() {
	if w := world.Load(); w != nil {
		w.BarrierDone()
	}
}

// gshgo_fast_team hands the fast path a team's words (shmem.TeamWords),
// so that its collectives on the mapped memory count where Go's do.
//
//export gshgo_fast_team
func gshgo_fast_team(x *C.struct_gsh_team, ft *C.struct_gsh_fast_team) {
	tw := teamOf(x, nil).Words()
	word := func(p *uint64) *C.uint64_t { return (*C.uint64_t)(unsafe.Pointer(p)) }
	ft.from, ft.seen, ft.push = word(tw.From), word(tw.Seen), cbool(tw.Push)
	for p := range 2 {
		ft.stage[p], ft.stage_seen[p] = word(tw.Stage[p]), word(tw.StageSeen[p])
		ft.bank[p] = (*C.uchar)(unsafe.Pointer(tw.Bank[p]))
	}
	ft.gen, ft.staged = word(tw.Gen), cbool(tw.Staged)
	ft.bank_size, ft.stage_part = C.size_t(tw.BankSize), C.size_t(tw.StagePart)
}

// gshgo_fast_wait_count waits in Go, with the checks for lost and
// finalized PEs, for a team's word whose polls in C ran out
// (shmem.Team.WaitCount).
//
//export gshgo_fast_wait_count
func gshgo_fast_wait_count(x *C.struct_gsh_team, word *C.uint64_t, want C.uint64_t, fn *C.char) {
	t := teamOf(x, fn)
	check(fn, t.WaitCount(C.GoString(fn), (*uint64)(unsafe.Pointer(word)), uint64(want)))
}
