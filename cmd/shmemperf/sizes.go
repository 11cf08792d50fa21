package main

import (
	"fmt"
	"strings"

	"github.com/goshmem/goshmem/core"
)

// maxSize bounds -sizes: the symmetric heap must hold the largest one.
const maxSize = 1 << 30

// parseSizes reads -sizes: "LO:HI" is every power of two from LO to HI
// (LO rounded up to one), "A,B,C" a list; sizes take K, M and G suffixes
// (powers of 1024). Each is from 1 byte to 1 GiB.
func parseSizes(spec string) ([]int, error) {
	bad := func(why string) ([]int, error) {
		return nil, fmt.Errorf("-sizes %q: %s; write LO:HI for the powers of two between them (\"8:4M\") or a list (\"8,64,1K\"), sizes from 1 to 1G", spec, why)
	}
	one := func(s string) (int, error) {
		n, err := core.ParseSize(s)
		if err != nil || n < 1 || n > maxSize {
			return 0, fmt.Errorf("%q is not a size from 1 to 1G", s)
		}
		return int(n), nil
	}
	if lo, hi, ok := strings.Cut(spec, ":"); ok {
		a, err := one(lo)
		if err != nil {
			return bad(err.Error())
		}
		b, err := one(hi)
		if err != nil {
			return bad(err.Error())
		}
		if a > b {
			return bad("LO is above HI")
		}
		p := 1
		for p < a {
			p *= 2
		}
		var out []int
		for ; p <= b; p *= 2 {
			out = append(out, p)
		}
		if len(out) == 0 {
			return bad("no power of two lies between LO and HI")
		}
		return out, nil
	}
	var out []int
	for _, s := range strings.Split(spec, ",") {
		n, err := one(strings.TrimSpace(s))
		if err != nil {
			return bad(err.Error())
		}
		out = append(out, n)
	}
	return out, nil
}

// formatSize prints a byte count for the table: 8, 4K, 4M.
func formatSize(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}
