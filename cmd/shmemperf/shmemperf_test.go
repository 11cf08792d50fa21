package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/bootstrap"
	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/shmem"
)

func TestParseSizes(t *testing.T) {
	for spec, want := range map[string][]int{
		"8:64":      {8, 16, 32, 64},
		"8:4M":      nil, // checked by length below
		"5:40":      {8, 16, 32},
		"1K":        {1024},
		"8, 100,1K": {8, 100, 1024},
	} {
		got, err := parseSizes(spec)
		require.NoError(t, err, spec)
		if want != nil {
			require.Equal(t, want, got, spec)
		}
	}
	all, err := parseSizes("8:4M")
	require.NoError(t, err)
	require.Len(t, all, 20)
	require.Equal(t, 4<<20, all[len(all)-1])
	for _, bad := range []string{"", "0", "64:8", "8:2G", "x", "9:15", "8,,16", "-8"} {
		_, err := parseSizes(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "LO:HI", bad)
	}
}

func TestSelectTests(t *testing.T) {
	all, err := selectTests("all")
	require.NoError(t, err)
	require.Equal(t, testNames(), names(all))
	for _, want := range []string{"put_lat", "get_lat", "put_bw", "get_bw", "put_rate", "fadd_lat", "cswap_lat", "add_rate", "barrier"} {
		require.Contains(t, testNames(), want)
	}
	// Every collective in both forms, under bench/peer/shmemperf.c's names.
	for _, c := range []string{"bcast_lat", "fcollect_lat", "collect_lat", "alltoall_lat", "alltoalls_lat", "reduce_lat"} {
		require.Contains(t, testNames(), c)
		b, ok := activeSetOf("team_" + c)
		require.True(t, ok, c)
		require.Equal(t, c, b)
	}
	b, ok := activeSetOf("team_sync")
	require.True(t, ok)
	require.Equal(t, "set_sync", b)
	some, err := selectTests("get_lat, put_lat,get_lat")
	require.NoError(t, err)
	require.Equal(t, []string{"get_lat", "put_lat"}, names(some))
	_, err = selectTests("put_lat,nope")
	require.ErrorContains(t, err, `unknown test "nope"`)
	require.ErrorContains(t, err, "put_lat")
}

func names(ts []test) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.name)
	}
	return out
}

func TestParseFlags(t *testing.T) {
	var out bytes.Buffer
	o, err := parseFlags([]string{"-test", "put_lat", "-sizes", "8,16", "-json"}, &out)
	require.NoError(t, err)
	require.Equal(t, []int{8, 16}, o.sizes)
	require.True(t, o.json)
	for _, args := range [][]string{
		{"-iters", "0"}, {"-window", "0"}, {"-plot", "x.pdf"}, {"-from", "a.jsonl"}, {"extra"}, {"-test", "x"},
	} {
		_, err := parseFlags(args, &out)
		require.Error(t, err, args)
	}
}

func TestReadResults(t *testing.T) {
	in := `{"test":"put_lat","provider":"loopback","npes":2,"size":8,"latency_us":0.03}

{"test":"put_bw","provider":"oshmem","npes":2,"size":4194304,"bandwidth_MBps":14200}
`
	rs, err := readResults("in", strings.NewReader(in))
	require.NoError(t, err)
	require.Len(t, rs, 2)
	v, m := rs[1].value()
	require.Equal(t, bandwidth, m)
	require.Equal(t, 14200.0, v)
	for _, bad := range []string{
		`{"test":"a","provider":"p","npes":2,"size":8}`,                              // no figure
		`{"test":"a","provider":"p","npes":2,"size":8,"latency_us":1,"rate_Mops":2}`, // two
		`{"test":"a","provider":"p","npes":2,"size":8,"latency_us":1,"extra":1}`,     // unknown key
		`{"test":"","provider":"p","npes":2,"size":8,"latency_us":1}`,                // no test
		`{"test":"a","provider":"p","npes":0,"size":8,"latency_us":1}`,               // no PEs
		`{"test":"a","provider":"p","npes":1,"size":-1,"latency_us":1}`,              // size
		`{"test":"a","provider":"p","npes":1,"size":8,"latency_us":-1}`,              // figure
		`{"test":"a","provider":"p","npes":1,"size":8,"latency_us":1} {"test":"b"}`,  // two values
		`not json`,
	} {
		_, err := readResults("in", strings.NewReader(bad))
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "in:1:", bad)
	}
}

func FuzzReadResults(f *testing.F) {
	f.Add([]byte(`{"test":"put_lat","provider":"loopback","npes":2,"size":8,"latency_us":0.03}`))
	f.Add([]byte("{\"test\":\"barrier\",\"provider\":\"x\",\"npes\":8,\"size\":0,\"latency_us\":8.3}\n\n"))
	f.Add([]byte(`{"test":"put_rate","provider":"x","npes":2,"size":8,"rate_Mops":84}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := readResults("fuzz", bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		for _, r := range rs {
			require.NoError(t, r.check())
			require.NoError(t, writeJSON(&out, r))
		}
		again, err := readResults("again", &out)
		require.NoError(t, err)
		require.Equal(t, rs, again)
	})
}

// job runs fn as every PE of an in-process loopback job of n PEs.
func job(t *testing.T, n int, fn func(w *shmem.World) error) {
	dir := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == core.EnvShmDir {
			return dir, true
		}
		return "", false
	}
	boots := bootstrap.NewLocal(n)
	id := fmt.Sprintf("shmemperf-%d-%s", os.Getpid(), t.Name())
	errs := make([]error, n)
	var wg sync.WaitGroup
	for pe := range n {
		wg.Go(func() {
			w, err := shmem.Init(shmem.WithBootstrap(boots[pe], id), shmem.WithEnv(lookup),
				shmem.WithHeapSize(16<<20), shmem.WithProvider("loopback"))
			if err != nil {
				errs[pe] = err
				return
			}
			errs[pe] = fn(w)
			if err := w.Finalize(); errs[pe] == nil {
				errs[pe] = err
			}
		})
	}
	wg.Wait()
	for pe, err := range errs {
		require.NoError(t, err, "PE %d", pe)
	}
}

// TestRunEveryTest runs every registered test briefly on two PEs and checks
// that PE 0 alone reports one well-formed figure per test and size.
func TestRunEveryTest(t *testing.T) {
	o, err := parseFlags([]string{"-sizes", "8,1K", "-iters", "50", "-warmup", "5", "-window", "4", "-json"}, &bytes.Buffer{})
	require.NoError(t, err)
	outs := make([]bytes.Buffer, 2)
	job(t, 2, func(w *shmem.World) error {
		_, err := run(w, o, &outs[w.MyPE()])
		return err
	})
	require.Empty(t, outs[1].String())
	text := outs[0].String()
	rs, err := readResults("pe0", strings.NewReader(text))
	require.NoError(t, err)
	want := 0
	for _, tc := range registry {
		if tc.unavailable == "" {
			want += len(tc.sizesFor(o.sizes))
		}
	}
	require.Len(t, rs, want)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		require.Len(t, keys, 5, line)
		require.Subset(t, keys, []string{"npes", "provider", "size", "test"}, line)
	}
	for _, r := range rs {
		v, _ := r.value()
		require.Greater(t, v, 0.0, "%+v", r)
		require.Equal(t, "loopback", r.Provider)
		require.Equal(t, 2, r.NPEs)
	}
}

func TestPlot(t *testing.T) {
	var rs []result
	for _, prov := range []string{"oshmem", "loopback"} {
		for size := 8; size <= 1<<20; size *= 4 {
			rs = append(rs, newResult(test{name: "put_lat", metric: latency}, prov, 2, size, float64(size)/1e4+0.02))
			rs = append(rs, newResult(test{name: "put_bw", metric: bandwidth}, prov, 2, size, float64(size)))
		}
	}
	for size := 8; size <= 1<<20; size *= 4 {
		rs = append(rs, newResult(test{name: "bcast_lat", metric: latency}, "loopback", 2, size, 1))
	}
	rs = append(rs, newResult(test{name: "fadd_lat", metric: latency}, "oshmem", 2, 8, 0.02))
	rs = append(rs, newResult(test{name: "barrier", metric: latency}, "loopback", 2, 0, 0.3))
	dir := t.TempDir()
	var files []string
	for i, half := range [][]result{rs[:len(rs)/2], rs[len(rs)/2:]} {
		var b bytes.Buffer
		for _, r := range half {
			require.NoError(t, writeJSON(&b, r))
		}
		name := filepath.Join(dir, fmt.Sprintf("%d.jsonl", i))
		require.NoError(t, os.WriteFile(name, b.Bytes(), 0o600))
		files = append(files, name)
	}
	for _, ext := range []string{".svg", ".png"} {
		out := filepath.Join(dir, "plot"+ext)
		require.NoError(t, plotFiles(out, files))
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Greater(t, len(b), 1000)
		if ext == ".svg" {
			svg := string(b)
			require.Contains(t, svg, "put_lat · oshmem")
			require.Contains(t, svg, "Bandwidth, 2 PEs")
			require.Contains(t, svg, "Latency, 2 PEs, collectives, loopback only", "collectives, and a test one provider ran, have a panel of their own")
			require.Contains(t, svg, "bcast_lat · loopback")
			require.NotContains(t, svg, "fadd_lat", "a single size among curves is left to the table")
		}
	}
	// One size, one figure: the axes still need a range.
	require.NoError(t, plotResults(filepath.Join(dir, "one.png"), rs[:1]))
	err := plotResults(filepath.Join(dir, "none.svg"), rs[len(rs)-1:])
	require.ErrorContains(t, err, "no latency or bandwidth")
}

func TestParseTargets(t *testing.T) {
	ts, err := parseTargets("put_lat:8=1.0, put_bw:4M=0.95,barrier@8=1,fadd_lat=1")
	require.NoError(t, err)
	require.Equal(t, []target{
		{test: "put_lat", size: 8, bound: 1}, {test: "put_bw", size: 4 << 20, bound: 0.95},
		{test: "barrier", size: -1, npes: 8, bound: 1}, {test: "fadd_lat", size: -1, bound: 1},
	}, ts)
	for _, bad := range []string{"put_lat", "put_lat=x", "put_lat=-1", "put_lat:8:16=1", "barrier@x=1", "=1", "a@0=1"} {
		_, err := parseTargets(bad)
		require.ErrorContains(t, err, "TEST[:SIZE][@NPES]=RATIO", bad)
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name, provider string, lat, bw []float64, barrier float64) string {
		var b bytes.Buffer
		for i := range lat {
			require.NoError(t, writeJSON(&b, newResult(test{name: "put_lat", metric: latency}, provider, 2, 8, lat[i])))
			require.NoError(t, writeJSON(&b, newResult(test{name: "put_bw", metric: bandwidth}, provider, 2, 4<<20, bw[i])))
		}
		require.NoError(t, writeJSON(&b, newResult(test{name: "barrier", metric: latency}, provider, 8, 0, barrier)))
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b.Bytes(), 0o600))
		return p
	}
	peer := write("peer.jsonl", "oshmem", []float64{0.025, 0.030, 0.020}, []float64{14000, 14200, 14400}, 8)
	ours := write("ours.jsonl", "loopback", []float64{0.020, 0.010, 0.5}, []float64{13000, 13600, 1}, 9)
	ts, err := parseTargets("put_lat:8=1.0,put_bw:4M=0.95,barrier@8=1.0")
	require.NoError(t, err)
	var out bytes.Buffer
	err = compareFiles(&out, peer, ours, ts)
	text := out.String()
	require.Contains(t, text, "oshmem")
	require.Contains(t, text, "loopback")
	// Medians: 0.025 vs 0.020 (0.80x, met), 14200 vs 13000 (0.92x, missed), 8 vs 9 (1.12x, missed).
	require.Regexp(t, `put_lat\s+2\s+8\s+us\s+0.0250\s+0.0200\s+0.80x\s+<= 1.00x met`, text)
	require.Regexp(t, `put_bw\s+2\s+4M\s+MB/s\s+14200\s+13000\s+0.92x\s+>= 0.95x MISSED`, text)
	require.Regexp(t, `barrier\s+8\s+-\s+us\s+8.00\s+9.00\s+1.12x\s+<= 1.00x MISSED`, text)
	require.ErrorContains(t, err, "2 targets missed")

	ts, err = parseTargets("put_lat=1.0")
	require.NoError(t, err)
	require.NoError(t, compareFiles(&bytes.Buffer{}, peer, ours, ts))
}

// A peer without teams: our team routine is set beside its active-set
// routine, and ours beside our own active-set routine below the table.
func TestCompareForms(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rs ...result) string {
		var b bytes.Buffer
		for _, r := range rs {
			require.NoError(t, writeJSON(&b, r))
		}
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b.Bytes(), 0o600))
		return p
	}
	lat := func(name, provider string, npes, size int, v float64) result {
		return newResult(test{name: name, metric: latency}, provider, npes, size, v)
	}
	peer := write("peer.jsonl", lat("bcast_lat", "oshmem", 4, 8, 2), lat("set_sync", "oshmem", 4, 0, 1))
	ours := write("ours.jsonl", lat("bcast_lat", "c", 4, 8, 1), lat("team_bcast_lat", "c", 4, 8, 3),
		lat("team_reduce_lat", "c", 4, 8, 5), lat("team_sync", "c", 4, 0, 0.5))
	var out bytes.Buffer
	ts, err := parseTargets("team_bcast_lat=1.0")
	require.NoError(t, err)
	err = compareFiles(&out, peer, ours, ts)
	require.ErrorContains(t, err, "team_bcast_lat/8/4 PEs")
	text := out.String()
	require.Regexp(t, `\nbcast_lat\s+4\s+8\s+us\s+2.00\s+1.00\s+0.50x`, text)
	require.Regexp(t, `\nteam_bcast_lat/bcast_lat\s+4\s+8\s+us\s+2.00\s+3.00\s+1.50x\s+<= 1.00x MISSED`, text)
	require.Regexp(t, `\nteam_sync/set_sync\s+4\s+-\s+us\s+1.00\s+0.5000\s+0.50x`, text)
	require.Regexp(t, `\nteam_reduce_lat\s+4\s+8\s+us\s+-\s+5.00\s+-`, text, "the peer has neither form")
	require.Contains(t, text, "# A/B: oshmem has no A")
	// Ours against ours: only where we have both forms.
	_, self, ok := strings.Cut(text, "# c: each team routine")
	require.True(t, ok, text)
	require.Regexp(t, `\nteam_bcast_lat/bcast_lat\s+4\s+8\s+us\s+1.00\s+3.00\s+3.00x\n$`, self)
	require.NotContains(t, self, "team_reduce_lat")
	require.NotContains(t, self, "team_sync")
}

// A collective that computes nothing is caught by the check before it is
// measured, on every PE but the broadcast's root, and run reports it once
// every test is done.
func TestCheckCatchesWrongResults(t *testing.T) {
	var wrong [2][]string
	job(t, 2, func(w *shmem.World) error {
		e := &env{w: w, largest: 64, iters: 10, warmup: 1}
		c, err := e.collBuffers()
		if err != nil {
			return err
		}
		for _, k := range []kind{bcastKind, gatherKind, alltoallKind, reduceKind} {
			if err := e.check(k, c, 8, func() error { return nil }, fmt.Sprint("kind ", k), 64); err != nil {
				return err
			}
		}
		// And a right one passes: the active-set fcollect.
		i := slices.IndexFunc(collectives, func(c collective) bool { return c.name == "fcollect_lat" })
		if err := e.check(gatherKind, c, 8, collectives[i].set(e, c, 8), "fcollect_lat", 64); err != nil {
			return err
		}
		wrong[w.MyPE()] = e.wrong
		return nil
	})
	require.Len(t, wrong[0], 3, "PE 0 is the root: its broadcast dest is not written")
	require.Len(t, wrong[1], 4)
	require.Contains(t, wrong[1][0], "kind 0, 64 bytes, 2 PEs: wrong result on PE 1: element 0 is -1, not 0")
}
