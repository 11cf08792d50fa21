package main

import (
	"fmt"
	"strings"
)

// param is one C parameter: its type and its name.
type param struct{ t, n string }

// routine is one public C function. A routine with a body is defined in
// typed_gen.c; one without is only declared (the runtime defines it).
type routine struct {
	ret    string
	name   string
	params []param
	body   string
}

func (r *routine) proto() string {
	ps := make([]string, len(r.params))
	for i, p := range r.params {
		ps[i] = cdecl(p.t, p.n)
	}
	if len(ps) == 0 {
		ps = []string{"void"}
	}
	return fmt.Sprintf("%s%s(%s)", retPrefix(r.ret), r.name, strings.Join(ps, ", "))
}

func retPrefix(ret string) string {
	if strings.HasSuffix(ret, "*") {
		return ret
	}
	return ret + " "
}

func cdecl(t, n string) string {
	if n == "" {
		return t
	}
	if strings.HasSuffix(t, "*") {
		return t + n
	}
	return t + " " + n
}

// args names the parameters, for a call that forwards them.
func (r *routine) args() string {
	ns := make([]string, len(r.params))
	for i, p := range r.params {
		ns[i] = p.n
	}
	return strings.Join(ns, ", ")
}

// section is a titled run of declarations in shmem.h.
type section struct {
	title    string
	routines []*routine
}

// generic is one type-generic name (C11 _Generic in C, overloads in C++):
// per type, the plain routine and, where the specification has one, its
// context form. pos is the index, in the plain routine, of the parameter
// whose type selects the routine; a context form has it one further on.
type generic struct {
	name  string
	pos   int
	plain []*routine
	ctx   []*routine
}

// the set of everything generated, in the order it is written.
type api struct {
	sections []*section
	generics []*generic
	// conly are routines only C declares: C++ reaches the same names
	// through its overloads, which a C declaration would collide with.
	conly []*routine
}

func (a *api) section(title string) *section {
	s := &section{title: title}
	a.sections = append(a.sections, s)
	return s
}

func (s *section) add(rs ...*routine) {
	for _, r := range rs {
		if r != nil {
			s.routines = append(s.routines, r)
		}
	}
}

// decl parses a hand-written declaration (of a routine the runtime
// defines) into a routine, so all of shmem.h is printed one way.
func decl(text string) *routine {
	text = strings.TrimSuffix(strings.TrimSpace(text), ";")
	open := strings.Index(text, "(")
	head, rest := text[:open], strings.TrimSuffix(text[open+1:], ")")
	r := &routine{}
	r.ret, r.name = splitDecl(head)
	if rest != "void" {
		for _, p := range strings.Split(rest, ",") {
			p = strings.TrimSpace(p)
			if p == "..." {
				r.params = append(r.params, param{t: "...", n: ""})
				continue
			}
			t, n := splitDecl(p)
			r.params = append(r.params, param{t: t, n: n})
		}
	}
	return r
}

// splitDecl splits "const long *name" into "const long *" and "name".
func splitDecl(s string) (string, string) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexAny(s, " *")
	return strings.TrimSpace(s[:i+1]), s[i+1:]
}

// builder makes the plain and the context form of a routine from one
// description: body(ctx, fn) is the definition's body given the context
// expression and the routine's own name.
type builder struct {
	ret    string
	base   string // the name without "shmem_" and "ctx_"
	params []param
	body   func(ctx, fn string) string
}

func (b builder) plain() *routine {
	name := "shmem_" + b.base
	r := &routine{ret: b.ret, name: name, params: b.params}
	if b.body != nil {
		r.body = b.body("SHMEM_CTX_DEFAULT", name)
	}
	return r
}

func (b builder) withCtx() *routine {
	name := "shmem_ctx_" + b.base
	ps := append([]param{{"shmem_ctx_t", "ctx"}}, b.params...)
	r := &routine{ret: b.ret, name: name, params: ps}
	if b.body != nil {
		r.body = b.body("ctx", name)
	}
	return r
}

func ptr(t string) string      { return t + " *" }
func constPtr(t string) string { return "const " + t + " *" }
func q(s string) string        { return `"` + s + `"` }

// toBits and fromBits convert between a value and impl.h's bit form.
func toBits(t ctype, expr string) string {
	switch t.bits {
	case "int":
		return "(uint64_t)" + expr
	case "f32":
		return "gsh_f32_bits(" + expr + ")"
	case "f64":
		return "gsh_f64_bits(" + expr + ")"
	}
	panic("capi/gen: no bit form for " + t.name)
}

func fromBits(t ctype, expr string) string {
	switch t.bits {
	case "int":
		return "(" + t.c + ")" + expr
	case "f32":
		return "gsh_bits_f32(" + expr + ")"
	case "f64":
		return "gsh_bits_f64(" + expr + ")"
	}
	panic("capi/gen: no bit form for " + t.name)
}

func sizeOf(t ctype) string { return "sizeof(" + t.c + ")" }
