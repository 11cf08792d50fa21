package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "window.h"
*/
import "C"

import "unsafe"

// gshgo_win_map is the Go half of gsh_win_init: it hands the C window
// path the World's window map (the provider's, forwarded by shmem), or
// nothing when the provider offers none (window.h). The addresses are the
// provider's mappings, valid until Finalize, which gsh_win_fini precedes.
//
//export gshgo_win_map
func gshgo_win_map() {
	w := world.Load()
	if w == nil {
		return
	}
	m := w.WindowMap()
	if m == nil {
		return
	}
	proto := C.CString(m.Protocol)
	defer C.free(unsafe.Pointer(proto))
	if C.gsh_win_begin(C.int(w.NPEs()), proto, C.int(m.Version), C.size_t(m.Max)) != 0 {
		return
	}
	for pe := range m.Words {
		if m.Words[pe] == 0 {
			continue
		}
		if C.gsh_win_add_link(C.int(pe), C.uintptr_t(m.Words[pe]), C.uintptr_t(m.Acked[pe])) != 0 {
			C.gsh_win_abort()
			return
		}
	}
	peers := make([]C.uintptr_t, w.NPEs())
	for _, s := range m.Segments {
		for pe, p := range s.Peers {
			peers[pe] = 0
			if p != 0 {
				peers[pe] = C.uintptr_t(p + uintptr(s.Start))
			}
		}
		if C.gsh_win_add_seg(C.uintptr_t(s.Base+uintptr(s.Start)), C.uintptr_t(s.End-s.Start), C.uintptr_t(s.Start),
			unsafe.SliceData(peers)) != 0 {
			C.gsh_win_abort()
			return
		}
	}
	C.gsh_win_commit()
}

// gshgo_win_landed is the provider's part of a put the C window path
// stored (window.h): the notice, or a report that the link went down and
// the put must be done again (0). A failure ends the job, naming fn.
//
//export gshgo_win_landed
func gshgo_win_landed(seg, pe C.int, off, n C.size_t, fn *C.char) C.int {
	done, err := theWorld(fn).WindowLanded(int(seg), int(pe), int(off), int(n))
	if err != nil {
		fail(fn, err)
	}
	return cbool(done)
}
