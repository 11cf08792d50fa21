package shmem

import (
	"fmt"
	"math/bits"

	"github.com/goshmem/goshmem/internal/mem"
)

// The spec's reduction type classes, as Go spells them.
type (
	// BitwiseElem is what AndReduce, OrReduce and XorReduce combine: the
	// integer types.
	BitwiseElem interface {
		~int8 | ~int16 | ~int32 | ~int64 | ~int |
			~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr
	}
	// OrderedElem is what MaxReduce and MinReduce combine: integers and
	// floating-point numbers.
	OrderedElem interface {
		BitwiseElem | ~float32 | ~float64
	}
	// ArithElem is what SumReduce and ProdReduce combine: ordered types and
	// complex numbers.
	ArithElem interface {
		OrderedElem | ~complex64 | ~complex128
	}
)

// AndReduce sets dest[i], on every member of t, to the bitwise and of
// source[i] over the members (shmem_and_reduce). It reduces len(source)
// elements; dest must hold as many and may be source itself. Every member
// passes the same length.
func AndReduce[T BitwiseElem](t *Team, dest, source []T) error {
	return reduce(t, "and_reduce", dest, source, andOf[T])
}

// OrReduce is AndReduce with bitwise or (shmem_or_reduce).
func OrReduce[T BitwiseElem](t *Team, dest, source []T) error {
	return reduce(t, "or_reduce", dest, source, orOf[T])
}

// XorReduce is AndReduce with bitwise exclusive or (shmem_xor_reduce).
func XorReduce[T BitwiseElem](t *Team, dest, source []T) error {
	return reduce(t, "xor_reduce", dest, source, xorOf[T])
}

// MaxReduce is AndReduce with the maximum (shmem_max_reduce).
func MaxReduce[T OrderedElem](t *Team, dest, source []T) error {
	return reduce(t, "max_reduce", dest, source, maxOf[T])
}

// MinReduce is AndReduce with the minimum (shmem_min_reduce).
func MinReduce[T OrderedElem](t *Team, dest, source []T) error {
	return reduce(t, "min_reduce", dest, source, minOf[T])
}

// SumReduce is AndReduce with the sum (shmem_sum_reduce). Every member
// gets the same bits, floating-point sums included.
func SumReduce[T ArithElem](t *Team, dest, source []T) error {
	return reduce(t, "sum_reduce", dest, source, sumOf[T])
}

// ProdReduce is AndReduce with the product (shmem_prod_reduce).
func ProdReduce[T ArithElem](t *Team, dest, source []T) error {
	return reduce(t, "prod_reduce", dest, source, prodOf[T])
}

// ReduceWith is the team reduction that combine performs, for operators
// and types the typed forms do not name (C's long double, carried as
// 16-byte elements), and for callers that pick the operator at run time
// (Combiner). op names the routine in errors.
func ReduceWith[T Elem](t *Team, op string, dest, source []T, combine func(acc, in []T)) error {
	return reduce(t, op, dest, source, combine)
}

// The reduction table: the spec's seven operators, each one body over the
// types it is defined for, whatever form (team or active set) or language
// calls it.
func andOf[T BitwiseElem](a, b []T) {
	for i := range a {
		a[i] &= b[i]
	}
}

func orOf[T BitwiseElem](a, b []T) {
	for i := range a {
		a[i] |= b[i]
	}
}

func xorOf[T BitwiseElem](a, b []T) {
	for i := range a {
		a[i] ^= b[i]
	}
}

func maxOf[T OrderedElem](a, b []T) {
	for i := range a {
		a[i] = max(a[i], b[i])
	}
}

func minOf[T OrderedElem](a, b []T) {
	for i := range a {
		a[i] = min(a[i], b[i])
	}
}

func sumOf[T ArithElem](a, b []T) {
	for i := range a {
		a[i] += b[i]
	}
}

func prodOf[T ArithElem](a, b []T) {
	for i := range a {
		a[i] *= b[i]
	}
}

// ReduceOp is one of the spec's reduction operators.
type ReduceOp uint8

const (
	ReduceAnd ReduceOp = iota + 1
	ReduceOr
	ReduceXor
	ReduceMax
	ReduceMin
	ReduceSum
	ReduceProd
)

var reduceOpNames = [...]string{ReduceAnd: "and", ReduceOr: "or", ReduceXor: "xor", ReduceMax: "max", ReduceMin: "min", ReduceSum: "sum", ReduceProd: "prod"}

func (op ReduceOp) String() string {
	if int(op) < len(reduceOpNames) && reduceOpNames[op] != "" {
		return reduceOpNames[op]
	}
	return fmt.Sprintf("ReduceOp(%d)", uint8(op))
}

// Combiner returns the table's combine function of op for T, one of the
// predeclared element types, and false where the spec defines no such
// reduction (a bitwise operator on a floating-point type, an ordering on
// a complex one) or T is not predeclared. It allocates nothing: the
// functions are made once, in combiners.
func Combiner[T Elem](op ReduceOp) (func(acc, in []T), bool) {
	if int(op) >= len(combiners[0]) {
		return nil, false
	}
	k := -1
	switch any(*new(T)).(type) {
	case int8:
		k = 0
	case int16:
		k = 1
	case int32:
		k = 2
	case int64:
		k = 3
	case int:
		k = 4
	case uint8:
		k = 5
	case uint16:
		k = 6
	case uint32:
		k = 7
	case uint64:
		k = 8
	case uint:
		k = 9
	case uintptr:
		k = 10
	case float32:
		k = 11
	case float64:
		k = 12
	case complex64:
		k = 13
	case complex128:
		k = 14
	}
	if k < 0 {
		return nil, false
	}
	c, ok := combiners[k][op].(func(acc, in []T))
	return c, ok && c != nil
}

// combiners holds Combiner's functions, by the element type's place in
// Combiner's switch and by operator: a generic function's value, made at
// each call, would be allocated each time.
var combiners = [...][ReduceProd + 1]any{
	combinerRow(intCombiner[int8]), combinerRow(intCombiner[int16]), combinerRow(intCombiner[int32]),
	combinerRow(intCombiner[int64]), combinerRow(intCombiner[int]),
	combinerRow(intCombiner[uint8]), combinerRow(intCombiner[uint16]), combinerRow(intCombiner[uint32]),
	combinerRow(intCombiner[uint64]), combinerRow(intCombiner[uint]), combinerRow(intCombiner[uintptr]),
	combinerRow(orderedCombiner[float32]), combinerRow(orderedCombiner[float64]),
	combinerRow(arithCombiner[complex64]), combinerRow(arithCombiner[complex128]),
}

// combinerRow is the combine functions of every operator for one type, as
// of (nil where the spec defines none).
func combinerRow[T Elem](of func(ReduceOp) func(acc, in []T)) (row [ReduceProd + 1]any) {
	for op := range row {
		row[op] = of(ReduceOp(op))
	}
	return row
}

func intCombiner[T BitwiseElem](op ReduceOp) func(acc, in []T) {
	switch op {
	case ReduceAnd:
		return andOf[T]
	case ReduceOr:
		return orOf[T]
	case ReduceXor:
		return xorOf[T]
	}
	return orderedCombiner[T](op)
}

func orderedCombiner[T OrderedElem](op ReduceOp) func(acc, in []T) {
	switch op {
	case ReduceMax:
		return maxOf[T]
	case ReduceMin:
		return minOf[T]
	}
	return arithCombiner[T](op)
}

func arithCombiner[T ArithElem](op ReduceOp) func(acc, in []T) {
	switch op {
	case ReduceSum:
		return sumOf[T]
	case ReduceProd:
		return prodOf[T]
	}
	return nil
}

// reduce copies source into dest and all-reduces dest: by a gather and a
// barrier when it is small and the team's barrier cheap; by host on a team
// spread over hosts with several PEs on some (coll_hostreduce.go); else
// through the combining tree when it is small; when it is large, on the
// World's team by a reduce-scatter and an allgather in large pieces, on
// other teams by recursive doubling in pieces that fit a message.
func reduce[T Elem](t *Team, op string, dest, source []T, combine func(acc, in []T)) error {
	if err := t.check(op); err != nil {
		return err
	}
	if err := checkReduce(op, dest, source); err != nil {
		return err
	}
	acc := dest[:len(source)]
	copy(acc, source)
	if t.gatherFits(len(mem.Bytes(acc))) {
		return t.collErr(op, gatherReduce(t, acc, combine))
	}
	if t.hostReduceFits() {
		return t.collErr(op, hostReduce(t, acc, combine))
	}
	if t.treeFits(len(mem.Bytes(acc))) {
		return t.collErr(op, tree(&t.g, 0, acc, combine, true))
	}
	per := t.w.coll.layout.chunk / mem.SizeOf[T]()
	if t == t.w.coll.world && bulkSlot(len(t.members)) > 0 && (len(t.members) > 2 || len(acc) > per) {
		// On two PEs, one exchange of recursive doubling beats the two
		// steps of the bulk reduction while the data fits one message.
		return t.collErr(op, bulkReduce(t, acc, combine))
	}
	for lo := 0; lo < len(acc); lo += per {
		if err := allreduce(t, acc[lo:min(lo+per, len(acc))], combine); err != nil {
			return t.collErr(op, err)
		}
	}
	return nil
}

// allreduce combines acc over the team by recursive doubling: in round k
// each PE swaps its partial result with the rank that differs in bit k and
// combines, so log2 n rounds leave every PE with the whole. When n is not a
// power of two, the first 2*rem ranks pair up first: the even one hands its
// data to the odd one, which joins the doubling, and gets the result back
// at the end (Thakur, Rabenseifner and Gropp). Each PE combines the same
// two operands of every step, in the other order at most, so all get the
// same bits.
//
// Messages of one generation go to one bank; a PE can start generation
// g+2, and reuse the bank, only after generation g+1 heard from everyone,
// by which time everyone has finished with g.
func allreduce[T Elem](t *Team, acc []T, combine func(acc, in []T)) error {
	n := len(t.members)
	if n == 1 {
		return nil
	}
	t.msgGen++
	gen := t.msgGen
	b := mem.Bytes(acc)
	p := 1 << (bits.Len(uint(n)) - 1)
	rem := n - p
	me := t.me
	last := bits.Len(uint(p)) // message index of the unfold
	newRank := me - rem
	if me < 2*rem {
		if me%2 == 0 {
			if err := t.send(me+1, 0, gen, b); err != nil {
				return err
			}
			in, err := t.recv(last, gen, len(b))
			if err != nil {
				return err
			}
			copy(b, in)
			return nil
		}
		in, err := t.recv(0, gen, len(b))
		if err != nil {
			return err
		}
		combine(acc, mem.Slice[T](in))
		newRank = me / 2
	}
	for mask, k := 1, 1; mask < p; mask, k = mask<<1, k+1 {
		pn := newRank ^ mask
		partner := pn + rem
		if pn < rem {
			partner = 2*pn + 1
		}
		if err := t.send(partner, k, gen, b); err != nil {
			return err
		}
		in, err := t.recv(k, gen, len(b))
		if err != nil {
			return err
		}
		combine(acc, mem.Slice[T](in))
	}
	if me < 2*rem {
		return t.send(me-1, last, gen, b)
	}
	return nil
}

// gatherFits reports whether a reduction of n bytes on the team goes by
// gatherReduce: where the team's barrier is the domain's own (so the team
// is the World's, whose gather banks are in the bulk area), puts are
// stores into mapped memory (the domain is a core.DirectAccess, which
// conformance checks agrees with core.CapDirectAccess), and every member's
// contributions together are at most gatherReduceMax bytes, which every
// member combines. There one barrier replaces the tree's two waits, and
// the puts to every member cost next to nothing.
func (t *Team) gatherFits(n int) bool {
	return t.w.direct != nil && t.domainBarrier() != nil &&
		n*len(t.members) <= gatherReduceMax
}

// gatherReduce all-reduces acc by putting it to every member, this PE
// included, at its rank's place in the gather bank of the generation's
// parity, and, after a barrier, combining the contributions in rank order,
// so every member gets the same bits.
//
// A member writes into bank g%2 for generation g only after the barrier
// of generation g-1, which every member entered after it had combined
// generation g-2 out of the same bank; so back-to-back reductions need no
// other barrier.
func gatherReduce[T Elem](t *Team, acc []T, combine func(acc, in []T)) error {
	n := len(t.members)
	*t.gatherGen++
	b := mem.Bytes(acc)
	bank := gatherOff + int(*t.gatherGen&1)*gatherBank
	ep := t.w.coll.ep
	for i := range n {
		to := (t.me + 1 + i) % n
		if err := ep.Put(t.members[to], t.w.heap, bank+t.me*len(b), b); err != nil {
			return err
		}
	}
	if err := ep.Quiet(); err != nil {
		return err
	}
	if err := t.barrier(); err != nil {
		return err
	}
	in := t.w.local[bank : bank+n*len(b)]
	copy(b, in)
	for r := 1; r < n; r++ {
		combine(acc, mem.Slice[T](in[r*len(b):(r+1)*len(b)]))
	}
	return nil
}

// stageFits reports whether a gather whose parts are part bytes goes by
// stage: on the World's team, whose gather banks it uses, where every
// member maps every other (puts are stores), where a part is at most
// stagePart bytes and all members' parts together fit a bank.
func (t *Team) stageFits(part int) bool {
	return t == t.w.coll.world && part > 0 && part <= stagePart && part*len(t.members) <= gatherBank && t.g.pushes()
}

// stagePart is the largest part a gather stages. The bank's copy out to
// dest grows with the parts, where a gather into dest copies each part
// once: measured on 2 CPUs (Go and C shmemperf, 3 alternating rounds),
// staging won at 4 KiB parts on 4 and 8 PEs (alltoall 16.1-20.2 us against
// 23.3-25.3 on 4) and lost at 16 KiB (31.5-37.1 against 24.9-28.5 on 4;
// on 2 PEs 5.1-5.9 against 1.8-2.8).
const stagePart = 4 << 10

// stage is the staged gather: it puts part(r), this PE's part for member
// r, at this PE's place (part bytes each) in every member's gather bank of
// the generation's parity, fences, and adds one to the member's stage word
// of that parity; then it waits until its own word has counted every
// other member's part and returns its bank. One round of signals, where
// a barrier before the gathers' puts (or a tree's two ways) took two or
// more.
//
// A member puts into bank g%2 for generation g once it has returned from
// generation g-1, which needed every member's part of g-1; and a member
// sends its part of g-1 only after it has read its bank of generation g-2
// (by stage or gatherReduce, which share the banks and the count). So
// nobody writes a bank its owner still reads, and the parity's word
// counts one generation's parts at a time.
func (t *Team) stage(part int, of func(r int) []byte) ([]byte, error) {
	n := len(t.members)
	*t.gatherGen++
	bank := gatherOff + int(*t.gatherGen&1)*gatherBank
	word := gwStage + gword(*t.gatherGen&1)
	ep := t.w.coll.ep
	for i := 1; i < n; i++ {
		to := (t.me + i) % n
		if err := ep.Put(t.members[to], t.w.heap, bank+t.me*part, of(to)[:part]); err != nil {
			return nil, err
		}
	}
	copy(t.w.local[bank+t.me*part:][:part], of(t.me))
	if err := ep.Fence(); err != nil {
		return nil, err
	}
	for i := 1; i < n; i++ {
		if err := t.g.signal((t.me+i)%n, word, 1); err != nil {
			return nil, err
		}
	}
	if err := t.g.await(word, uint64(n-1)); err != nil {
		return nil, err
	}
	return t.w.local[bank : bank+n*part], nil
}
