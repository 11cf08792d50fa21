package core

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
)

// DescribePEs groups PEs by a key of their value, in order of first
// appearance: "4096 on PEs 0, 2; 8192 on PE 1". It lists at most eight
// PEs per group, so a large job still gets a readable line. It returns ""
// when every PE has the same key: nothing differs.
func DescribePEs[T any](vals []T, key func(T) string) string {
	var order []string
	pes := map[string][]int{}
	for pe, v := range vals {
		k := key(v)
		if _, seen := pes[k]; !seen {
			order = append(order, k)
		}
		pes[k] = append(pes[k], pe)
	}
	if len(order) < 2 {
		return ""
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = k + " on " + peList(pes[k])
	}
	return strings.Join(parts, "; ")
}

// peList is "PE 3" or "PEs 0, 1, 2 and 5 more".
func peList(list []int) string {
	const show = 8
	var s strings.Builder
	s.WriteString("PE")
	if len(list) > 1 {
		s.WriteString("s")
	}
	for j, pe := range list[:min(len(list), show)] {
		if j > 0 {
			s.WriteString(",")
		}
		fmt.Fprintf(&s, " %d", pe)
	}
	if len(list) > show {
		fmt.Fprintf(&s, " and %d more", len(list)-show)
	}
	return s.String()
}

// AgreeRegion is the exchange a collective Domain.NewRegion starts with:
// every PE sends the index of the region it is creating (how many it
// created before) and its size, and all fail alike, naming the PEs that
// differ, unless every PE creates the same region. The size must lie in
// [0, max].
func AgreeRegion(b Bootstrap, idx, size, max int) error {
	msg := binary.LittleEndian.AppendUint64(nil, uint64(int64(size)))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(idx))
	all, err := b.Allgather(msg)
	if err != nil {
		return fmt.Errorf("exchange of region sizes: %w", err)
	}
	return regionsAgree(all, max)
}

// CheckRegisterMem is the check Domain.RegisterRegion makes of the
// memory it is given, on this PE alone: empty, or whole pages from a page
// boundary, since a provider may remap it in place and mmap works in
// pages. The error wraps ErrInvalid and says what is wrong.
func CheckRegisterMem(m []byte) error {
	page := os.Getpagesize()
	// reflect, not unsafe: core stays free of unsafe, and internal/mem
	// imports core.
	addr := reflect.ValueOf(m).Pointer()
	switch {
	case len(m) == 0:
		return nil
	case addr%uintptr(page) != 0:
		return fmt.Errorf("memory to register at %#x does not start on a page boundary (%d bytes; it is %d bytes past one): %w",
			addr, page, addr%uintptr(page), ErrInvalid)
	case len(m)%page != 0:
		return fmt.Errorf("memory to register at %#x is %d bytes long, not a whole number of %d-byte pages: %w",
			addr, len(m), page, ErrInvalid)
	}
	return nil
}

// AgreeRegister is the exchange a collective Domain.RegisterRegion starts
// with: every PE checks its own memory (CheckRegisterMem), the PEs agree
// on whether all of it is fit, then exchange the region's index and
// length as AgreeRegion does. Every PE returns the same failure, naming
// the PEs whose memory was unfit or whose lengths differ.
func AgreeRegister(b Bootstrap, idx int, m []byte, max int) error {
	if err := Agree(b, CheckRegisterMem(m)); err != nil {
		return fmt.Errorf("register region %d: %w", idx, err)
	}
	if err := AgreeRegion(b, idx, len(m), max); err != nil {
		return fmt.Errorf("register region %d: %w", idx, err)
	}
	return nil
}

// regionsAgree checks the messages of AgreeRegion.
func regionsAgree(all [][]byte, max int) error {
	type entry struct {
		size int64
		idx  uint32
	}
	vals := make([]entry, len(all))
	for pe, m := range all {
		if len(m) != 12 {
			return fmt.Errorf("PE %d sent a malformed region size exchange of %d bytes: %w", pe, len(m), ErrInvalid)
		}
		vals[pe] = entry{int64(binary.LittleEndian.Uint64(m)), binary.LittleEndian.Uint32(m[8:])}
	}
	if d := DescribePEs(vals, func(e entry) string { return fmt.Sprint(e.idx) }); d != "" {
		return fmt.Errorf("PEs disagree on how many regions they created before (%s); every PE must create the same regions in the same order: %w", d, ErrInvalid)
	}
	if d := DescribePEs(vals, func(e entry) string { return fmt.Sprint(e.size) }); d != "" {
		return fmt.Errorf("PEs passed different sizes (%s): %w", d, ErrInvalid)
	}
	if s := vals[0].size; s < 0 || s > int64(min(max, math.MaxInt)) {
		return fmt.Errorf("region of %d bytes: allowed 0 to %d: %w", s, max, ErrInvalid)
	}
	return nil
}
