package main

import (
	"fmt"
	"strings"
)

// The OpenSHMEM profiling interface: every shmem_ routine is also
// callable as pshmem_, so a tool can define a routine's shmem_ name,
// record the call and pass it on to the library's pshmem_ one. The
// library's definitions keep their shmem_ names; each pshmem_ name is a
// weak alias of one, made in the translation unit that defines it (an
// alias must be), so a program or tool that defines a pshmem_ name of its
// own wins over the library's without a clash.

// profiled says whether r has a pshmem_ name: the routines named shmem_;
// the deprecated 1.x names (start_pes, shmalloc, _my_pe, ...) have none.
func profiled(r *routine) bool { return strings.HasPrefix(r.name, "shmem_") }

// pname is r's profiling name.
func pname(r *routine) string { return "p" + r.name }

// alias is the line that makes r's pshmem_ name a weak alias of r.
func alias(r *routine) string {
	return fmt.Sprintf("extern __typeof__(%s) %s __attribute__((weak, alias(%q)));\n", r.name, pname(r), r.name)
}

// aliases writes the aliases of the routines with (body) or without
// (!body) a generated definition.
func (a *api) aliases(b *strings.Builder, body bool) {
	for _, s := range a.sections {
		for _, r := range s.routines {
			if profiled(r) && (r.body != "") == body {
				b.WriteString(alias(r))
			}
		}
	}
}

// runtimeAliases writes pshmem_gen.h, which runtime.c includes at its end:
// the aliases of the routines it defines by hand.
func (a *api) runtimeAliases() string {
	var b strings.Builder
	b.WriteString(banner)
	b.WriteString(`/*
 * The profiling names (pshmem_) of the routines runtime.c defines, as weak
 * aliases of them; runtime.c includes this after its definitions. Those of
 * the typed routines are at the end of typed_gen.c.
 */
`)
	a.aliases(&b, false)
	return b.String()
}

// pheader writes pshmem.h: the declarations of the pshmem_ names, for a
// tool that calls them.
func (a *api) pheader() string {
	var b strings.Builder
	b.WriteString(banner)
	b.WriteString(`/*
 * The OpenSHMEM profiling interface: every shmem_ routine of shmem.h under
 * its pshmem_ name as well. A tool defines the shmem_ routines it watches
 * and calls the pshmem_ ones to do the work.
 */
#ifndef PSHMEM_H
#define PSHMEM_H

#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

`)
	for _, s := range a.sections {
		first := true
		for _, r := range s.routines {
			if !profiled(r) {
				continue
			}
			if first {
				fmt.Fprintf(&b, "/* %s */\n", s.title)
				first = false
			}
			p := *r
			p.name = pname(r)
			b.WriteString(p.proto() + ";\n")
		}
		if !first {
			b.WriteString("\n")
		}
	}
	b.WriteString(`#ifdef __cplusplus
}
#endif

#endif /* PSHMEM_H */
`)
	return b.String()
}
