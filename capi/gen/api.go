package main

import (
	"fmt"
	"strings"
)

// build assembles the whole C API: every routine of OpenSHMEM 1.6 (and the
// deprecated names it keeps), in the order shmem.h declares them, and the
// type-generic names over them.
func build() *api {
	a := &api{}
	a.setup()
	a.memory()
	a.teams()
	a.contexts()
	a.rma()
	a.blocks()
	a.signal()
	a.amo()
	a.collectives()
	a.scans()
	a.activeSet()
	a.p2p()
	a.ordering()
	a.locks()
	a.compat()
	return a
}

func (a *api) declare(title string, decls ...string) {
	s := a.section(title)
	for _, d := range decls {
		s.add(decl(d))
	}
}

func (a *api) setup() {
	a.declare("Library setup, exit and query",
		"void shmem_init(void)",
		"int shmem_init_thread(int requested, int *provided)",
		"void shmem_query_thread(int *provided)",
		"void shmem_query_initialized(int *initialized)",
		"void shmem_finalize(void)",
		"void shmem_global_exit(int status)",
		"int shmem_my_pe(void)",
		"int shmem_n_pes(void)",
		"int shmem_pe_accessible(int pe)",
		"int shmem_addr_accessible(const void *addr, int pe)",
		"void *shmem_ptr(const void *dest, int pe)",
		"void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)",
		"void shmem_info_get_version(int *major, int *minor)",
		"void shmem_info_get_name(char *name)",
		"void shmem_pcontrol(int level, ...)",
	)
}

func (a *api) memory() {
	a.declare("Memory management",
		"void *shmem_malloc(size_t size)",
		"void *shmem_malloc_with_hints(size_t size, long hints)",
		"void *shmem_calloc(size_t count, size_t size)",
		"void *shmem_realloc(void *ptr, size_t size)",
		"void *shmem_align(size_t alignment, size_t size)",
		"void shmem_free(void *ptr)",
	)
}

func (a *api) teams() {
	a.declare("Teams",
		"int shmem_team_my_pe(shmem_team_t team)",
		"int shmem_team_n_pes(shmem_team_t team)",
		"int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)",
		"int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)",
		"int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)",
		"int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team)",
		"void shmem_team_destroy(shmem_team_t team)",
	)
}

func (a *api) contexts() {
	a.declare("Communication contexts",
		"int shmem_ctx_create(long options, shmem_ctx_t *ctx)",
		"int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)",
		"void shmem_ctx_destroy(shmem_ctx_t ctx)",
		"int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)",
		"void shmem_ctx_session_start(shmem_ctx_t ctx, long options, const shmem_ctx_session_config_t *config, long config_mask)",
		"void shmem_ctx_session_stop(shmem_ctx_t ctx)",
	)
}

// pair adds a routine and its context form to s and returns both.
func pair(s *section, b builder) (*routine, *routine) {
	p, c := b.plain(), b.withCtx()
	s.add(p, c)
	return p, c
}

// family collects the routines of one generic name while they are made.
func (a *api) family(name string, pos int) *generic {
	g := &generic{name: name, pos: pos}
	a.generics = append(a.generics, g)
	return g
}

// member adds one type's routines to g if the type may be named there.
func (g *generic) member(gen []ctype, t ctype, p, c *routine) {
	for _, u := range gen {
		if u.name == t.name {
			g.plain = append(g.plain, p)
			if c != nil {
				g.ctx = append(g.ctx, c)
			}
			return
		}
	}
}

func (a *api) rma() {
	type rmaOp struct {
		name string
		fn   string // the gsh_ call
		get  bool
	}
	ops := []rmaOp{{"put", "gsh_put", false}, {"put_nbi", "gsh_put_nbi", false},
		{"get", "gsh_get", true}, {"get_nbi", "gsh_get_nbi", true}}
	gen := genericTypes(rmaTypes)

	s := a.section("RMA: put and get, blocking and non-blocking")
	for _, op := range ops {
		op := op
		g := a.family("shmem_"+op.name, 0)
		for _, t := range rmaTypes {
			t := t
			pp, cp := pair(s, builder{ret: "void", base: t.name + "_" + op.name,
				params: []param{{ptr(t.c), "dest"}, {constPtr(t.c), "source"}, {"size_t", "nelems"}, {"int", "pe"}},
				body: func(ctx, fn string) string {
					return fmt.Sprintf("%s(%s, dest, source, %s, pe, %s);", op.fn, ctx, nbytes(sizeOf(t), fn), q(fn))
				}})
			g.member(gen, t, pp, cp)
		}
		for _, bits := range []int{8, 16, 32, 64, 128} {
			bits := bits
			pair(s, builder{ret: "void", base: insert(op.name, fmt.Sprint(bits)),
				params: []param{{"void *", "dest"}, {"const void *", "source"}, {"size_t", "nelems"}, {"int", "pe"}},
				body: func(ctx, fn string) string {
					return fmt.Sprintf("%s(%s, dest, source, %s, pe, %s);", op.fn, ctx, nbytes(fmt.Sprint(bits/8), fn), q(fn))
				}})
		}
		pair(s, builder{ret: "void", base: insert(op.name, "mem"),
			params: []param{{"void *", "dest"}, {"const void *", "source"}, {"size_t", "nelems"}, {"int", "pe"}},
			body: func(ctx, fn string) string {
				return fmt.Sprintf("%s(%s, dest, source, nelems, pe, %s);", op.fn, ctx, q(fn))
			}})
	}

	s = a.section("RMA: single elements")
	gp, gg := a.family("shmem_p", 0), a.family("shmem_g", 0)
	for _, t := range rmaTypes {
		t := t
		pp, cp := pair(s, builder{ret: "void", base: t.name + "_p",
			params: []param{{ptr(t.c), "dest"}, {t.c, "value"}, {"int", "pe"}},
			body: func(ctx, fn string) string {
				return fmt.Sprintf("gsh_p(%s, dest, &value, %s, pe, %s);", ctx, sizeOf(t), q(fn))
			}})
		gp.member(gen, t, pp, cp)
		pg, cg := pair(s, builder{ret: t.c, base: t.name + "_g",
			params: []param{{constPtr(t.c), "source"}, {"int", "pe"}},
			body: func(ctx, fn string) string {
				return fmt.Sprintf("%s r = 0;\n\tgsh_g(%s, &r, source, %s, pe, %s);\n\treturn r;", t.c, ctx, sizeOf(t), q(fn))
			}})
		gg.member(gen, t, pg, cg)
	}

	s = a.section("RMA: strided")
	for _, op := range []struct{ name, fn string }{{"iput", "gsh_iput"}, {"iget", "gsh_iget"}} {
		op := op
		g := a.family("shmem_"+op.name, 0)
		for _, t := range rmaTypes {
			t := t
			pp, cp := pair(s, builder{ret: "void", base: t.name + "_" + op.name,
				params: []param{{ptr(t.c), "dest"}, {constPtr(t.c), "source"}, {"ptrdiff_t", "dst"}, {"ptrdiff_t", "sst"}, {"size_t", "nelems"}, {"int", "pe"}},
				body: func(ctx, fn string) string {
					return fmt.Sprintf("%s(%s, dest, source, dst, sst, nelems, %s, pe, %s);", op.fn, ctx, sizeOf(t), q(fn))
				}})
			g.member(gen, t, pp, cp)
		}
		for _, bits := range []int{8, 16, 32, 64, 128} {
			bits := bits
			pair(s, builder{ret: "void", base: fmt.Sprintf("%s%d", op.name, bits),
				params: []param{{"void *", "dest"}, {"const void *", "source"}, {"ptrdiff_t", "dst"}, {"ptrdiff_t", "sst"}, {"size_t", "nelems"}, {"int", "pe"}},
				body: func(ctx, fn string) string {
					return fmt.Sprintf("%s(%s, dest, source, dst, sst, nelems, %d, pe, %s);", op.fn, ctx, bits/8, q(fn))
				}})
		}
	}
}

// blocks adds 1.6's interleaved blocks: shmem_ibput and shmem_ibget in
// every typed, sized and context form.
func (a *api) blocks() {
	s := a.section("RMA: blocks at strides")
	gen := genericTypes(rmaTypes)
	for _, op := range []struct{ name, fn string }{{"ibput", "gsh_ibput"}, {"ibget", "gsh_ibget"}} {
		op := op
		g := a.family("shmem_"+op.name, 0)
		ps := func(dt, st string) []param {
			return []param{{dt, "dest"}, {st, "source"}, {"ptrdiff_t", "dst"}, {"ptrdiff_t", "sst"},
				{"size_t", "bsize"}, {"size_t", "nblocks"}, {"int", "pe"}}
		}
		for _, t := range rmaTypes {
			t := t
			pp, cp := pair(s, builder{ret: "void", base: t.name + "_" + op.name, params: ps(ptr(t.c), constPtr(t.c)),
				body: func(ctx, fn string) string {
					return fmt.Sprintf("%s(%s, dest, source, dst, sst, bsize, nblocks, %s, pe, %s);", op.fn, ctx, sizeOf(t), q(fn))
				}})
			g.member(gen, t, pp, cp)
		}
		for _, bits := range []int{8, 16, 32, 64, 128} {
			bits := bits
			pair(s, builder{ret: "void", base: fmt.Sprintf("%s%d", op.name, bits), params: ps("void *", "const void *"),
				body: func(ctx, fn string) string {
					return fmt.Sprintf("%s(%s, dest, source, dst, sst, bsize, nblocks, %d, pe, %s);", op.fn, ctx, bits/8, q(fn))
				}})
		}
	}
}

// nbytes is the byte count of nelems elements of size bytes, checked:
// gsh_bytes ends the job naming fn where the product overflows size_t.
func nbytes(size, fn string) string {
	return fmt.Sprintf("gsh_bytes(nelems, %s, %s)", size, q(fn))
}

// insert puts a size or "mem" where the sized and mem names have it:
// before a suffix (shmem_put32_nbi, shmem_putmem_nbi), else at the end.
func insert(op, s string) string {
	if i := strings.Index(op, "_"); i >= 0 {
		return op[:i] + s + op[i:]
	}
	return op + s
}

func (a *api) signal() {
	gen := genericTypes(rmaTypes)
	s := a.section("Put with signal")
	for _, nbi := range []int{0, 1} {
		nbi := nbi
		sfx := map[int]string{0: "", 1: "_nbi"}[nbi]
		g := a.family("shmem_put_signal"+sfx, 0)
		sig := []param{{"uint64_t *", "sig_addr"}, {"uint64_t", "signal"}, {"int", "sig_op"}, {"int", "pe"}}
		for _, t := range rmaTypes {
			t := t
			pp, cp := pair(s, builder{ret: "void", base: t.name + "_put_signal" + sfx,
				params: append([]param{{ptr(t.c), "dest"}, {constPtr(t.c), "source"}, {"size_t", "nelems"}}, sig...),
				body: func(ctx, fn string) string {
					return fmt.Sprintf("gsh_put_signal(%s, dest, source, %s, sig_addr, signal, sig_op, pe, %d, %s);", ctx, nbytes(sizeOf(t), fn), nbi, q(fn))
				}})
			g.member(gen, t, pp, cp)
		}
		for _, bits := range []int{8, 16, 32, 64, 128} {
			bits := bits
			pair(s, builder{ret: "void", base: fmt.Sprintf("put%d_signal%s", bits, sfx),
				params: append([]param{{"void *", "dest"}, {"const void *", "source"}, {"size_t", "nelems"}}, sig...),
				body: func(ctx, fn string) string {
					return fmt.Sprintf("gsh_put_signal(%s, dest, source, %s, sig_addr, signal, sig_op, pe, %d, %s);", ctx, nbytes(fmt.Sprint(bits/8), fn), nbi, q(fn))
				}})
		}
		pair(s, builder{ret: "void", base: "putmem_signal" + sfx,
			params: append([]param{{"void *", "dest"}, {"const void *", "source"}, {"size_t", "nelems"}}, sig...),
			body: func(ctx, fn string) string {
				return fmt.Sprintf("gsh_put_signal(%s, dest, source, nelems, sig_addr, signal, sig_op, pe, %d, %s);", ctx, nbi, q(fn))
			}})
	}
	for _, op := range []struct{ name, c string }{{"signal_set", "SHMEM_SIGNAL_SET"}, {"signal_add", "SHMEM_SIGNAL_ADD"}} {
		op := op
		pair(s, builder{ret: "void", base: op.name,
			params: []param{{"uint64_t *", "sig_addr"}, {"uint64_t", "signal"}, {"int", "pe"}},
			body: func(ctx, fn string) string {
				return fmt.Sprintf("gsh_signal(%s, sig_addr, signal, %s, pe, %s);", ctx, op.c, q(fn))
			}})
	}
	s.add(decl("uint64_t shmem_signal_fetch(const uint64_t *sig_addr)"),
		decl("uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)"))
}

// amoOp describes one atomic routine family.
type amoOp struct {
	name   string // as in shmem_TYPENAME_atomic_NAME
	op     string // enum gsh_amo
	types  []ctype
	fetch  bool // returns the old value
	value  bool // takes a value
	cond   bool // takes a compare value
	source bool // reads only: its target is const TYPE *source
}

var amoOps = []amoOp{
	{name: "fetch", op: "GSH_AMO_FETCH", types: amoExtTypes, fetch: true, source: true},
	{name: "set", op: "GSH_AMO_SET", types: amoExtTypes, value: true},
	{name: "compare_swap", op: "GSH_AMO_CSWAP", types: amoStdTypes, fetch: true, value: true, cond: true},
	{name: "swap", op: "GSH_AMO_SWAP", types: amoExtTypes, fetch: true, value: true},
	{name: "fetch_inc", op: "GSH_AMO_FINC", types: amoStdTypes, fetch: true},
	{name: "inc", op: "GSH_AMO_INC", types: amoStdTypes},
	{name: "fetch_add", op: "GSH_AMO_FADD", types: amoStdTypes, fetch: true, value: true},
	{name: "add", op: "GSH_AMO_ADD", types: amoStdTypes, value: true},
	{name: "fetch_and", op: "GSH_AMO_FAND", types: amoBitTypes, fetch: true, value: true},
	{name: "and", op: "GSH_AMO_AND", types: amoBitTypes, value: true},
	{name: "fetch_or", op: "GSH_AMO_FOR", types: amoBitTypes, fetch: true, value: true},
	{name: "or", op: "GSH_AMO_OR", types: amoBitTypes, value: true},
	{name: "fetch_xor", op: "GSH_AMO_FXOR", types: amoBitTypes, fetch: true, value: true},
	{name: "xor", op: "GSH_AMO_XOR", types: amoBitTypes, value: true},
}

// The 1.4 names of the same operations, which 1.5 keeps as deprecated.
var depAmoOps = []struct {
	old string
	amoOp
}{
	{"fetch", amoOp{op: "GSH_AMO_FETCH", types: depAmoExtTypes, fetch: true, source: true}},
	{"set", amoOp{op: "GSH_AMO_SET", types: depAmoExtTypes, value: true}},
	{"cswap", amoOp{op: "GSH_AMO_CSWAP", types: depAmoTypes, fetch: true, value: true, cond: true}},
	{"swap", amoOp{op: "GSH_AMO_SWAP", types: depAmoExtTypes, fetch: true, value: true}},
	{"finc", amoOp{op: "GSH_AMO_FINC", types: depAmoTypes, fetch: true}},
	{"inc", amoOp{op: "GSH_AMO_INC", types: depAmoTypes}},
	{"fadd", amoOp{op: "GSH_AMO_FADD", types: depAmoTypes, fetch: true, value: true}},
	{"add", amoOp{op: "GSH_AMO_ADD", types: depAmoTypes, value: true}},
}

// amoBuilder makes one type's routine of op; nbi makes the non-blocking
// fetching form, whose result goes to *fetch instead.
func amoBuilder(base string, op amoOp, t ctype, nbi bool) builder {
	var ps []param
	if nbi {
		ps = append(ps, param{ptr(t.c), "fetch"})
	}
	target := "dest"
	if op.source {
		target = "source"
		ps = append(ps, param{constPtr(t.c), "source"})
	} else {
		ps = append(ps, param{ptr(t.c), "dest"})
	}
	operand, compare := "0", "0"
	switch {
	case op.cond:
		ps = append(ps, param{t.c, "cond"}, param{t.c, "value"})
		operand, compare = toBits(t, "value"), toBits(t, "cond")
	case op.value:
		ps = append(ps, param{t.c, "value"})
		operand = toBits(t, "value")
	case op.op == "GSH_AMO_FINC" || op.op == "GSH_AMO_INC":
		operand = "1"
	}
	ps = append(ps, param{"int", "pe"})
	addr := target
	if op.source {
		addr = "(void *)source" // the runtime's signature serves writers too
	}
	ret := "void"
	if op.fetch && !nbi {
		ret = t.c
	}
	return builder{ret: ret, base: base, params: ps, body: func(ctx, fn string) string {
		if nbi {
			return fmt.Sprintf("gsh_amo_nbi(%s, fetch, %s, %s, %s, %s, %s, %s, pe, %s);",
				ctx, addr, op.op, t.kind, sizeOf(t), operand, compare, q(fn))
		}
		call := fmt.Sprintf("gsh_amo(%s, %s, %s, %s, %s, %s, %s, pe, %s)",
			ctx, addr, op.op, t.kind, sizeOf(t), operand, compare, q(fn))
		if ret == "void" {
			return "(void)" + call + ";"
		}
		return "return " + fromBits(t, call) + ";"
	}}
}

func (a *api) amo() {
	s := a.section("Atomic memory operations")
	for _, op := range amoOps {
		g := a.family("shmem_atomic_"+op.name, 0)
		gen := genericTypes(op.types)
		for _, t := range op.types {
			p, c := pair(s, amoBuilder(t.name+"_atomic_"+op.name, op, t, false))
			g.member(gen, t, p, c)
		}
	}
	s = a.section("Atomic memory operations: non-blocking fetching forms")
	for _, op := range amoOps {
		if !op.fetch {
			continue
		}
		g := a.family("shmem_atomic_"+op.name+"_nbi", 0)
		gen := genericTypes(op.types)
		for _, t := range op.types {
			p, c := pair(s, amoBuilder(t.name+"_atomic_"+op.name+"_nbi", op, t, true))
			g.member(gen, t, p, c)
		}
	}
	s = a.section("Atomic memory operations: deprecated 1.4 names")
	for _, d := range depAmoOps {
		g := a.family("shmem_"+d.old, 0)
		gen := genericTypes(d.types)
		for _, t := range d.types {
			p := amoBuilder(t.name+"_"+d.old, d.amoOp, t, false).plain()
			s.add(p)
			g.member(gen, t, p, nil)
		}
	}
}

func (a *api) collectives() {
	s := a.section("Collectives on teams")
	s.add(decl("void shmem_barrier_all(void)"), decl("void shmem_sync_all(void)"),
		decl("int shmem_team_sync(shmem_team_t team)"))
	gen := genericTypes(rmaTypes)
	team := param{"shmem_team_t", "team"}
	type collOp struct {
		name    string
		fn      string
		root    bool // takes PE_root
		strided bool // takes dst and sst
	}
	ops := []collOp{
		{name: "broadcast", fn: "gsh_broadcast", root: true},
		{name: "collect", fn: "gsh_collect"},
		{name: "fcollect", fn: "gsh_fcollect"},
		{name: "alltoall", fn: "gsh_alltoall"},
		{name: "alltoalls", fn: "gsh_alltoalls", strided: true},
	}
	for _, op := range ops {
		op := op
		g := a.family("shmem_"+op.name, 1)
		one := func(base, dt, st, size string) *routine {
			ps := []param{team, {dt, "dest"}, {st, "source"}}
			if op.strided {
				ps = append(ps, param{"ptrdiff_t", "dst"}, param{"ptrdiff_t", "sst"})
			}
			ps = append(ps, param{"size_t", "nelems"})
			if op.root {
				ps = append(ps, param{"int", "PE_root"})
			}
			return builder{ret: "int", base: base, params: ps, body: func(_, fn string) string {
				switch {
				case op.strided:
					return fmt.Sprintf("return %s(team, dest, source, dst, sst, nelems, %s, %s);", op.fn, size, q(fn))
				case op.root:
					return fmt.Sprintf("return %s(team, dest, source, %s, PE_root, %s);", op.fn, nbytes(size, fn), q(fn))
				}
				return fmt.Sprintf("return %s(team, dest, source, %s, %s);", op.fn, nbytes(size, fn), q(fn))
			}}.plain()
		}
		for _, t := range rmaTypes {
			r := one(t.name+"_"+op.name, ptr(t.c), constPtr(t.c), sizeOf(t))
			s.add(r)
			g.member(gen, t, r, nil)
		}
		s.add(one(op.name+"mem", "void *", "const void *", "1"))
	}

	s = a.section("Reductions on teams")
	for _, op := range redOps {
		op := op
		g := a.family("shmem_"+op.name+"_reduce", 1)
		gen := genericTypes(op.team)
		for _, t := range op.team {
			t := t
			r := builder{ret: "int", base: t.name + "_" + op.name + "_reduce",
				params: []param{team, {ptr(t.c), "dest"}, {constPtr(t.c), "source"}, {"size_t", "nreduce"}},
				body: func(_, fn string) string {
					return fmt.Sprintf("return gsh_reduce(team, dest, source, nreduce, %s, %s, %s, %s);", op.op, t.kind, sizeOf(t), q(fn))
				}}.plain()
			s.add(r)
			g.member(gen, t, r, nil)
		}
	}
}

// scans adds the team scans of OpenSHMEM 1.6 on every type the sum
// reduction takes: shmem_TYPENAME_sum_inscan and _sum_exscan.
func (a *api) scans() {
	s := a.section("Scans on teams")
	team := param{"shmem_team_t", "team"}
	for _, op := range []struct {
		name      string
		exclusive int
	}{{"sum_inscan", 0}, {"sum_exscan", 1}} {
		op := op
		g := a.family("shmem_"+op.name, 1)
		gen := genericTypes(redArithTypes)
		for _, t := range redArithTypes {
			t := t
			r := builder{ret: "int", base: t.name + "_" + op.name,
				params: []param{team, {ptr(t.c), "dest"}, {constPtr(t.c), "source"}, {"size_t", "nelems"}},
				body: func(_, fn string) string {
					return fmt.Sprintf("return gsh_sum_scan(team, dest, source, nelems, %d, %s, %s, %s);", op.exclusive, t.kind, sizeOf(t), q(fn))
				}}.plain()
			s.add(r)
			g.member(gen, t, r, nil)
		}
	}
}

func (a *api) activeSet() {
	s := a.section("Deprecated: collectives on active sets")
	s.add(decl("void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)"),
		decl("void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)"))
	set := []param{{"int", "PE_start"}, {"int", "logPE_stride"}, {"int", "PE_size"}, {"long *", "pSync"}}
	const setArgs = "PE_start, logPE_stride, PE_size, pSync"
	buf := []param{{"void *", "dest"}, {"const void *", "source"}}
	for _, bits := range []int{32, 64} {
		bits := bits
		n := bits / 8
		cat := func(ps ...[]param) []param {
			var out []param
			for _, p := range ps {
				out = append(out, p...)
			}
			return out
		}
		s.add(builder{ret: "void", base: fmt.Sprintf("broadcast%d", bits),
			params: cat(buf, []param{{"size_t", "nelems"}, {"int", "PE_root"}}, set),
			body: func(_, fn string) string {
				return fmt.Sprintf("gsh_broadcast_as(dest, source, %s, PE_root, %s, %s);", nbytes(fmt.Sprint(n), fn), setArgs, q(fn))
			}}.plain())
		for _, op := range []string{"collect", "fcollect", "alltoall"} {
			op := op
			s.add(builder{ret: "void", base: fmt.Sprintf("%s%d", op, bits),
				params: cat(buf, []param{{"size_t", "nelems"}}, set),
				body: func(_, fn string) string {
					return fmt.Sprintf("gsh_%s_as(dest, source, %s, %s, %s);", op, nbytes(fmt.Sprint(n), fn), setArgs, q(fn))
				}}.plain())
		}
		s.add(builder{ret: "void", base: fmt.Sprintf("alltoalls%d", bits),
			params: cat(buf, []param{{"ptrdiff_t", "dst"}, {"ptrdiff_t", "sst"}, {"size_t", "nelems"}}, set),
			body: func(_, fn string) string {
				return fmt.Sprintf("gsh_alltoalls_as(dest, source, dst, sst, nelems, %d, %s, %s);", n, setArgs, q(fn))
			}}.plain())
	}
	for _, op := range redOps {
		op := op
		for _, t := range op.all {
			t := t
			s.add(builder{ret: "void", base: t.name + "_" + op.name + "_to_all",
				params: []param{{ptr(t.c), "dest"}, {constPtr(t.c), "source"}, {"int", "nreduce"},
					{"int", "PE_start"}, {"int", "logPE_stride"}, {"int", "PE_size"}, {ptr(t.c), "pWrk"}, {"long *", "pSync"}},
				body: func(_, fn string) string {
					return fmt.Sprintf("gsh_reduce_as(dest, source, nreduce, %s, %s, %s, PE_start, logPE_stride, PE_size, pWrk, pSync, %s);",
						op.op, t.kind, sizeOf(t), q(fn))
				}}.plain())
		}
	}
}

// waitOp describes one point-to-point synchronization form.
type waitOp struct {
	name   string // after shmem_TYPENAME_
	mode   string // gsh_wait form
	ret    string
	multi  bool // over an array: nelems and status
	some   bool // writes indices
	vector bool // a value per element
}

var waitOps = func() []waitOp {
	var ops []waitOp
	for _, block := range []bool{true, false} {
		name, flag, one, all := "test", "", "int", "int"
		if block {
			name, flag, one, all = "wait_until", " | GSH_WAIT_BLOCK", "void", "void"
		}
		ops = append(ops, waitOp{name: name, mode: "GSH_WAIT_ONE" + flag, ret: one})
		for _, vec := range []bool{false, true} {
			sfx := ""
			if vec {
				sfx = "_vector"
			}
			ops = append(ops,
				waitOp{name: name + "_all" + sfx, mode: "GSH_WAIT_ALL" + flag, ret: all, multi: true, vector: vec},
				waitOp{name: name + "_any" + sfx, mode: "GSH_WAIT_ANY" + flag, ret: "size_t", multi: true, vector: vec},
				waitOp{name: name + "_some" + sfx, mode: "GSH_WAIT_SOME" + flag, ret: "size_t", multi: true, some: true, vector: vec})
		}
	}
	return ops
}()

func (a *api) p2p() {
	s := a.section("Point-to-point synchronization")
	gen := genericTypes(waitTypes)
	for _, op := range waitOps {
		op := op
		g := a.family("shmem_"+op.name, 0)
		for _, t := range waitTypes {
			t := t
			var ps []param
			if op.multi {
				ps = []param{{ptr(t.c), "ivars"}, {"size_t", "nelems"}}
				if op.some {
					ps = append(ps, param{"size_t *", "indices"})
				}
				ps = append(ps, param{"const int *", "status"})
			} else {
				ps = []param{{ptr(t.c), "ivar"}}
			}
			ps = append(ps, param{"int", "cmp"})
			if op.vector {
				ps = append(ps, param{constPtr(t.c), "cmp_values"}) // const since 1.6
			} else {
				ps = append(ps, param{t.c, "cmp_value"})
			}
			r := builder{ret: op.ret, base: t.name + "_" + op.name, params: ps,
				body: func(_, fn string) string {
					ivars, nelems, status, indices := "ivar", "1", "NULL", "NULL"
					if op.multi {
						ivars, nelems, status = "ivars", "nelems", "status"
					}
					if op.some {
						indices = "indices"
					}
					value, values := toBits(t, "cmp_value"), "NULL"
					if op.vector {
						value, values = "0", "cmp_values"
					}
					call := fmt.Sprintf("gsh_wait(%s, %s, %s, %s, %s, %s, %s, cmp, %s, %s, %s)",
						op.mode, ivars, nelems, status, indices, t.kind, sizeOf(t), value, values, q(fn))
					switch op.ret {
					case "void":
						return "(void)" + call + ";"
					case "int":
						return "return (int)" + call + ";"
					}
					return "return " + call + ";"
				}}.plain()
			s.add(r)
			g.member(gen, t, r, nil)
		}
	}

	s = a.section("Deprecated: point-to-point synchronization")
	g := a.family("shmem_wait", 0)
	for _, t := range depWaitTypes {
		t := t
		r := builder{ret: "void", base: t.name + "_wait", params: []param{{ptr(t.c), "ivar"}, {t.c, "cmp_value"}},
			body: func(_, fn string) string {
				return fmt.Sprintf("(void)gsh_wait(GSH_WAIT_ONE | GSH_WAIT_BLOCK, ivar, 1, NULL, NULL, %s, %s, SHMEM_CMP_NE, %s, NULL, %s);",
					t.kind, sizeOf(t), toBits(t, "cmp_value"), q(fn))
			}}.plain()
		s.add(r)
		g.member(depWaitTypes, t, r, nil)
	}
	// The untyped 1.x names, on long. C11 programs reach them through the
	// generic macros of the same names and C++ through the overloads, so
	// only pre-C11 C sees these declarations.
	long := lookup("long")
	for _, r := range []*routine{
		{ret: "void", name: "shmem_wait", params: []param{{"long *", "ivar"}, {"long", "cmp_value"}},
			body: fmt.Sprintf("(void)gsh_wait(GSH_WAIT_ONE | GSH_WAIT_BLOCK, ivar, 1, NULL, NULL, %s, %s, SHMEM_CMP_NE, %s, NULL, %s);",
				long.kind, sizeOf(long), toBits(long, "cmp_value"), q("shmem_wait"))},
		{ret: "void", name: "shmem_wait_until", params: []param{{"long *", "ivar"}, {"int", "cmp"}, {"long", "cmp_value"}},
			body: fmt.Sprintf("(void)gsh_wait(GSH_WAIT_ONE | GSH_WAIT_BLOCK, ivar, 1, NULL, NULL, %s, %s, cmp, %s, NULL, %s);",
				long.kind, sizeOf(long), toBits(long, "cmp_value"), q("shmem_wait_until"))},
	} {
		s.add(r)
		a.conly = append(a.conly, r)
	}
}

func (a *api) ordering() {
	a.declare("Memory ordering",
		"void shmem_fence(void)",
		"void shmem_ctx_fence(shmem_ctx_t ctx)",
		"void shmem_quiet(void)",
		"void shmem_ctx_quiet(shmem_ctx_t ctx)",
		"void shmem_pe_quiet(const int *target_pes, size_t npes)",
		"void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes)",
	)
}

func (a *api) locks() {
	a.declare("Distributed locks",
		"void shmem_set_lock(long *lock)",
		"void shmem_clear_lock(long *lock)",
		"int shmem_test_lock(long *lock)",
	)
}

func (a *api) compat() {
	a.declare("Deprecated: cache management (no-ops)",
		"void shmem_clear_cache_inv(void)",
		"void shmem_set_cache_inv(void)",
		"void shmem_clear_cache_line_inv(void *dest)",
		"void shmem_set_cache_line_inv(void *dest)",
		"void shmem_udcflush(void)",
		"void shmem_udcflush_line(void *dest)",
	)
	a.declare("Deprecated: the 1.x setup and memory names",
		"void start_pes(int npes)",
		"int _my_pe(void)",
		"int _num_pes(void)",
		"void *shmalloc(size_t size)",
		"void shfree(void *ptr)",
		"void *shrealloc(void *ptr, size_t size)",
		"void *shmemalign(size_t alignment, size_t size)",
	)
}
