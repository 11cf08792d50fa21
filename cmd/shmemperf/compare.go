package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// A comparison sets the results of one program (the peer) beside those of
// another (ours), run alternately over several rounds: per test, size and
// number of PEs it prints both medians and their ratio, ours over the
// peer's, and whether the ratio meets its target where one is set.
//
// A team routine the peer lacks (an OpenSHMEM before 1.5 has no teams) is
// set beside the peer's active-set routine of the same collective: the
// row team_bcast_lat/bcast_lat is our team_bcast_lat against the peer's
// bcast_lat. Below the table, a second one sets each of our team routines
// beside our own active-set routine of the same collective.

// target bounds the ratio ours/peer of one row: at most max for a
// latency, at least min for a bandwidth or rate.
type target struct {
	test  string
	size  int // -1: any
	npes  int // 0: any
	bound float64
}

// parseTargets reads -targets: entries TEST[:SIZE][@NPES]=RATIO separated
// by commas, such as "put_lat:8=1.0,put_bw:4M=0.95,barrier@8=1.0". The
// ratio is ours over the peer's: a latency meets it at or below, a
// bandwidth or rate at or above.
func parseTargets(spec string) ([]target, error) {
	var out []target
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	for _, e := range strings.Split(spec, ",") {
		bad := func(why string) ([]target, error) {
			return nil, fmt.Errorf("-targets: %q: %s; write TEST[:SIZE][@NPES]=RATIO, for example put_bw:4M=0.95 or barrier@8=1.0", e, why)
		}
		key, ratio, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok {
			return bad("no =RATIO")
		}
		t := target{size: -1}
		var err error
		if t.bound, err = strconv.ParseFloat(ratio, 64); err != nil || !(t.bound > 0) {
			return bad("the ratio is not a positive number")
		}
		if key, pes, ok := strings.Cut(key, "@"); ok {
			if t.npes, err = strconv.Atoi(pes); err != nil || t.npes < 1 {
				return bad("the number of PEs is not a positive integer")
			}
			t.test = key
		} else {
			t.test = key
		}
		if name, size, ok := strings.Cut(t.test, ":"); ok {
			sizes, err := parseSizes(size)
			if err != nil || len(sizes) != 1 {
				return bad("the size is not one size")
			}
			t.test, t.size = name, sizes[0]
		}
		if t.test == "" {
			return bad("no test")
		}
		out = append(out, t)
	}
	return out, nil
}

// rowKey names a row of the comparison.
type rowKey struct {
	test       string
	size, npes int
}

// compareFiles reads the peer's and our JSON lines files and prints the
// comparison to out. It returns an error if a target is missed, after
// printing every row.
func compareFiles(out io.Writer, peerFile, oursFile string, targets []target) error {
	load := func(name string) (map[rowKey][]float64, metricsOf, string, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, "", err
		}
		defer f.Close()
		rs, err := readResults(name, f)
		if err != nil {
			return nil, nil, "", err
		}
		vals, metrics := map[rowKey][]float64{}, metricsOf{}
		var provider string
		for _, r := range rs {
			k := rowKey{r.Test, r.Size, r.NPEs}
			v, m := r.value()
			vals[k] = append(vals[k], v)
			metrics[k] = m
			provider = r.Provider
		}
		return vals, metrics, provider, nil
	}
	peer, metrics, peerName, err := load(peerFile)
	if err != nil {
		return fmt.Errorf("-compare: %w", err)
	}
	ours, oursMetrics, oursName, err := load(oursFile)
	if err != nil {
		return fmt.Errorf("-compare: %w", err)
	}
	keys := make([]rowKey, 0, len(peer)+len(ours))
	for k := range peer {
		keys = append(keys, k)
	}
	for k, m := range oursMetrics {
		if _, ok := peer[k]; !ok {
			keys = append(keys, k)
			metrics[k] = m
		}
	}
	// The peer's active-set figure where it has no team routine.
	against := map[rowKey]string{}
	for k := range ours {
		b, ok := activeSetOf(k.test)
		pk := rowKey{b, k.size, k.npes}
		if _, has := peer[k]; ok && !has && len(peer[pk]) > 0 {
			peer[k], against[k] = peer[pk], b
		}
	}
	sortRows(keys)
	labels := make([]string, len(keys))
	width := 10
	for i, k := range keys {
		labels[i] = k.test
		if b, ok := against[k]; ok {
			labels[i] += "/" + b
		}
		width = max(width, len(labels[i]))
	}
	fmt.Fprintf(out, "%-*s %5s %5s %5s %12s %12s %7s  %s\n", width, "test", "npes", "size", "unit", orDash(peerName, "peer"), orDash(oursName, "ours"), "ratio", "target")
	var missed []string
	for i, k := range keys {
		m := metrics[k]
		p, pok := median(peer[k])
		o, ook := median(ours[k])
		size := rowSize(k.size)
		ratio, verdict := "-", ""
		if pok && ook && p > 0 {
			r := o / p
			ratio = fmt.Sprintf("%.2fx", r)
			if t, ok := findTarget(targets, k); ok {
				met := r <= t.bound
				sign := "<="
				if m != latency {
					met, sign = r >= t.bound, ">="
				}
				verdict = fmt.Sprintf("%s %.2fx ", sign, t.bound)
				if met {
					verdict += "met"
				} else {
					verdict += "MISSED"
					missed = append(missed, fmt.Sprintf("%s/%s/%d PEs", k.test, size, k.npes))
				}
			}
		}
		fmt.Fprintf(out, "%-*s %5d %5s %5s %12s %12s %7s  %s\n", width, labels[i], k.npes, size, m.unit(),
			figure(p, pok), figure(o, ook), ratio, verdict)
	}
	if len(against) > 0 {
		fmt.Fprintf(out, "# A/B: %s has no A, a team routine; its column is its B, the active-set routine of the same collective\n", orDash(peerName, "the peer"))
	}
	formsTable(out, orDash(oursName, "ours"), ours, oursMetrics)
	if len(missed) > 0 {
		return fmt.Errorf("%d targets missed: %s", len(missed), strings.Join(missed, ", "))
	}
	return nil
}

// formsTable prints, for each of the team routines in vals, our figure
// beside that of our active-set routine of the same collective, if any.
func formsTable(out io.Writer, name string, vals map[rowKey][]float64, metrics metricsOf) {
	var keys []rowKey
	width := 10
	for k := range vals {
		if b, ok := activeSetOf(k.test); ok && len(vals[rowKey{b, k.size, k.npes}]) > 0 {
			keys = append(keys, k)
			width = max(width, len(k.test)+1+len(b))
		}
	}
	if len(keys) == 0 {
		return
	}
	sortRows(keys)
	fmt.Fprintf(out, "# %s: each team routine A against its own active-set routine B of the same collective; ratio = A / B\n", name)
	fmt.Fprintf(out, "%-*s %5s %5s %5s %12s %12s %7s\n", width, "test", "npes", "size", "unit", "active set", "team", "ratio")
	for _, k := range keys {
		b, _ := activeSetOf(k.test)
		a, _ := median(vals[rowKey{b, k.size, k.npes}])
		t, _ := median(vals[k])
		ratio := "-"
		if a > 0 {
			ratio = fmt.Sprintf("%.2fx", t/a)
		}
		fmt.Fprintf(out, "%-*s %5d %5s %5s %12s %12s %7s\n", width, k.test+"/"+b, k.npes, rowSize(k.size), metrics[k].unit(),
			figure(a, true), figure(t, true), ratio)
	}
}

// sortRows orders rows as the tests are registered, then by PEs and size.
func sortRows(keys []rowKey) {
	order := testNames()
	slices.SortFunc(keys, func(a, b rowKey) int {
		ia, ib := slices.Index(order, a.test), slices.Index(order, b.test)
		return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a.test, b.test), cmp.Compare(a.npes, b.npes), cmp.Compare(a.size, b.size))
	})
}

// rowSize is a row's size: "-" for the tests without one (barrier).
func rowSize(n int) string {
	if n == 0 {
		return "-"
	}
	return formatSize(n)
}

type metricsOf map[rowKey]metric

func orDash(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func figure(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// findTarget returns the most specific target for k.
func findTarget(ts []target, k rowKey) (target, bool) {
	best, found, score := target{}, false, -1
	for _, t := range ts {
		if t.test != k.test || (t.size >= 0 && t.size != k.size) || (t.npes > 0 && t.npes != k.npes) {
			continue
		}
		s := 0
		if t.size >= 0 {
			s++
		}
		if t.npes > 0 {
			s++
		}
		if s > score {
			best, found, score = t, true, s
		}
	}
	return best, found
}

// median of vs; false if there are none.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[len(s)/2], true
}
