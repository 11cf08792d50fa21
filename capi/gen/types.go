package main

import "strings"

// ctype is one of the specification's TYPE/TYPENAME pairs.
type ctype struct {
	name string // TYPENAME, as in shmem_TYPENAME_put
	c    string // TYPE, the C spelling
	kind string // the gsh_kind the runtime is told, as a C expression
	bits string // how a value becomes the uint64_t of impl.h: "int", "f32", "f64", or "" (never)
	// alias marks the typedef'd integer types (int32_t, size_t, ...). In C
	// they are the same type as one of the standard integer types, so a
	// _Generic association list or a set of C++ overloads may not name
	// both; signed says on which side of that rule an alias falls.
	alias  bool
	signed bool
}

var allTypes = []ctype{
	{name: "float", c: "float", kind: "GSH_FLOAT", bits: "f32"},
	{name: "double", c: "double", kind: "GSH_FLOAT", bits: "f64"},
	{name: "longdouble", c: "long double", kind: "GSH_FLOAT"},
	// Whether plain char is signed is the platform's choice; CHAR_MIN says.
	{name: "char", c: "char", kind: "GSH_CHAR_KIND", bits: "int"},
	{name: "schar", c: "signed char", kind: "GSH_INT", bits: "int", signed: true},
	{name: "short", c: "short", kind: "GSH_INT", bits: "int", signed: true},
	{name: "int", c: "int", kind: "GSH_INT", bits: "int", signed: true},
	{name: "long", c: "long", kind: "GSH_INT", bits: "int", signed: true},
	{name: "longlong", c: "long long", kind: "GSH_INT", bits: "int", signed: true},
	{name: "uchar", c: "unsigned char", kind: "GSH_UINT", bits: "int"},
	{name: "ushort", c: "unsigned short", kind: "GSH_UINT", bits: "int"},
	{name: "uint", c: "unsigned int", kind: "GSH_UINT", bits: "int"},
	{name: "ulong", c: "unsigned long", kind: "GSH_UINT", bits: "int"},
	{name: "ulonglong", c: "unsigned long long", kind: "GSH_UINT", bits: "int"},
	{name: "int8", c: "int8_t", kind: "GSH_INT", bits: "int", alias: true, signed: true},
	{name: "int16", c: "int16_t", kind: "GSH_INT", bits: "int", alias: true, signed: true},
	{name: "int32", c: "int32_t", kind: "GSH_INT", bits: "int", alias: true, signed: true},
	{name: "int64", c: "int64_t", kind: "GSH_INT", bits: "int", alias: true, signed: true},
	{name: "uint8", c: "uint8_t", kind: "GSH_UINT", bits: "int", alias: true},
	{name: "uint16", c: "uint16_t", kind: "GSH_UINT", bits: "int", alias: true},
	{name: "uint32", c: "uint32_t", kind: "GSH_UINT", bits: "int", alias: true},
	{name: "uint64", c: "uint64_t", kind: "GSH_UINT", bits: "int", alias: true},
	{name: "size", c: "size_t", kind: "GSH_UINT", bits: "int", alias: true},
	{name: "ptrdiff", c: "ptrdiff_t", kind: "GSH_INT", bits: "int", alias: true, signed: true},
	{name: "complexf", c: "float _Complex", kind: "GSH_COMPLEX"},
	{name: "complexd", c: "double _Complex", kind: "GSH_COMPLEX"},
}

func lookup(name string) ctype {
	for _, t := range allTypes {
		if t.name == name {
			return t
		}
	}
	panic("capi/gen: no type " + name)
}

// types turns a space-separated list of TYPENAMEs into the table's rows,
// in the order given (the order of the specification's tables).
func types(names ...string) []ctype {
	var out []ctype
	for _, list := range names {
		for _, n := range strings.Fields(list) {
			out = append(out, lookup(n))
		}
	}
	return out
}

// The specification's type tables, each once.
var (
	// Standard RMA types: RMA, put-with-signal and the team collectives.
	rmaTypes = types("float double longdouble char schar short int long longlong",
		"uchar ushort uint ulong ulonglong int8 int16 int32 int64 uint8 uint16 uint32 uint64 size ptrdiff")
	// Standard AMO types: every AMO.
	amoStdTypes = types("int long longlong uint ulong ulonglong int32 int64 uint32 uint64 size ptrdiff")
	// Extended AMO types: fetch, set and swap.
	amoExtTypes = types("float double", "int long longlong uint ulong ulonglong int32 int64 uint32 uint64 size ptrdiff")
	// Bitwise AMO types: and, or, xor.
	amoBitTypes = types("uint ulong ulonglong int32 int64 uint32 uint64")
	// Point-to-point synchronization types: wait_until and test.
	waitTypes = types("short int long longlong ushort uint ulong ulonglong int32 int64 uint32 uint64 size ptrdiff")

	// Reduction types, per operator class.
	redBitTypes    = types("uchar ushort uint ulong ulonglong int8 int16 int32 int64 uint8 uint16 uint32 uint64 size")
	redMinMaxTypes = types("char schar short int long longlong ptrdiff uchar ushort uint ulong ulonglong",
		"int8 int16 int32 int64 uint8 uint16 uint32 uint64 size float double longdouble")
	redArithTypes = types("char schar short int long longlong ptrdiff uchar ushort uint ulong ulonglong",
		"int8 int16 int32 int64 uint8 uint16 uint32 uint64 size float double longdouble complexd complexf")

	// The 1.4 active-set reductions (shmem_TYPENAME_OP_to_all).
	toAllBitTypes    = types("short int long longlong")
	toAllMinMaxTypes = types("short int long longlong float double longdouble")
	toAllArithTypes  = types("complexd complexf short int long longlong float double longdouble")

	// The 1.4 AMO names (shmem_TYPENAME_fadd, ...). 1.4 defined them on
	// int, long and long long (and float and double where it had them);
	// programs written against 1.5's tables call them on every standard
	// (and extended) AMO type, and the routines cost nothing more there.
	depAmoTypes    = amoStdTypes
	depAmoExtTypes = amoExtTypes
	// The 1.4 shmem_TYPENAME_wait.
	depWaitTypes = types("short int long longlong")
)

// reduction operators and the type table each one takes.
type redOp struct {
	name string // as in shmem_TYPENAME_OP_reduce
	op   string // enum gsh_op
	team []ctype
	all  []ctype // the active-set form's types
}

var redOps = []redOp{
	{"and", "GSH_OP_AND", redBitTypes, toAllBitTypes},
	{"or", "GSH_OP_OR", redBitTypes, toAllBitTypes},
	{"xor", "GSH_OP_XOR", redBitTypes, toAllBitTypes},
	{"max", "GSH_OP_MAX", redMinMaxTypes, toAllMinMaxTypes},
	{"min", "GSH_OP_MIN", redMinMaxTypes, toAllMinMaxTypes},
	{"sum", "GSH_OP_SUM", redArithTypes, toAllArithTypes},
	{"prod", "GSH_OP_PROD", redArithTypes, toAllArithTypes},
}

// genericTypes keeps the entries of list that a type-generic interface
// may name: the standard C types, and an alias only where the list holds
// no standard type of its signedness (then the alias names the only
// routine of that signedness and size, as int32_t does for the bitwise
// AMOs). Two associations of one _Generic, or two C++ overloads, for what
// is one type on this platform would not compile.
func genericTypes(list []ctype) []ctype {
	hasStd := map[bool]bool{}
	for _, t := range list {
		if !t.alias && t.bits == "int" && t.name != "char" {
			hasStd[t.signed] = true
		}
	}
	var out []ctype
	for _, t := range list {
		if t.alias && hasStd[t.signed] {
			continue
		}
		out = append(out, t)
	}
	return out
}

// constant is one macro of shmem.h.
type constant struct {
	name, value string
	old         bool // also spelled _NAME, the deprecated 1.x spelling
	doc         string
}

// The sync and work array sizes are here and nowhere else: the runtime
// sizes its use of a program's pSync and pWrk against these numbers (in
// longs, and in elements of the reduction's type).
var syncSizes = []constant{
	{name: "SHMEM_BARRIER_SYNC_SIZE", value: "64", old: true},
	{name: "SHMEM_BCAST_SYNC_SIZE", value: "64", old: true},
	{name: "SHMEM_COLLECT_SYNC_SIZE", value: "64", old: true},
	{name: "SHMEM_REDUCE_SYNC_SIZE", value: "128", old: true},
	{name: "SHMEM_ALLTOALL_SYNC_SIZE", value: "64"},
	{name: "SHMEM_ALLTOALLS_SYNC_SIZE", value: "64"},
	{name: "SHMEM_SYNC_SIZE", value: "128", old: true, doc: "the largest of the above"},
	{name: "SHMEM_REDUCE_MIN_WRKDATA_SIZE", value: "64", old: true},
	{name: "SHMEM_SYNC_VALUE", value: "0L", old: true},
}

var versionConsts = []constant{
	{name: "SHMEM_MAJOR_VERSION", value: "1", old: true},
	{name: "SHMEM_MINOR_VERSION", value: "6", old: true},
	{name: "SHMEM_MAX_NAME_LEN", value: "256", old: true},
	{name: "SHMEM_VENDOR_STRING", value: `"goshmem"`, old: true},
}

var threadConsts = []constant{
	{name: "SHMEM_THREAD_SINGLE", value: "0"},
	{name: "SHMEM_THREAD_FUNNELED", value: "1"},
	{name: "SHMEM_THREAD_SERIALIZED", value: "2"},
	{name: "SHMEM_THREAD_MULTIPLE", value: "3"},
}

var ctxConsts = []constant{
	{name: "SHMEM_CTX_SERIALIZED", value: "(1L << 0)"},
	{name: "SHMEM_CTX_PRIVATE", value: "(1L << 1)"},
	{name: "SHMEM_CTX_NOSTORE", value: "(1L << 2)"},
}

var sessionConsts = []constant{
	{name: "SHMEM_CTX_SESSION_BATCH", value: "(1L << 0)"},
	{name: "SHMEM_CTX_SESSION_TOTAL_OPS", value: "(1L << 0)"},
}

var cmpConsts = []constant{
	{name: "SHMEM_CMP_EQ", value: "1", old: true},
	{name: "SHMEM_CMP_NE", value: "2", old: true},
	{name: "SHMEM_CMP_GT", value: "3", old: true},
	{name: "SHMEM_CMP_GE", value: "4", old: true},
	{name: "SHMEM_CMP_LT", value: "5", old: true},
	{name: "SHMEM_CMP_LE", value: "6", old: true},
}

var signalConsts = []constant{
	{name: "SHMEM_SIGNAL_SET", value: "0"},
	{name: "SHMEM_SIGNAL_ADD", value: "1"},
}

var mallocConsts = []constant{
	{name: "SHMEM_MALLOC_ATOMICS_REMOTE", value: "(1L << 0)"},
	{name: "SHMEM_MALLOC_SIGNAL_REMOTE", value: "(1L << 1)"},
}

var teamConsts = []constant{
	{name: "SHMEM_TEAM_NUM_CONTEXTS", value: "(1L << 0)"},
}
