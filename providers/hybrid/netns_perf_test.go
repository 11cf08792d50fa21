package hybrid_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/providers/loopback"
)

// envPerf asks TestNamespacedPerf to run: the namespaced figures of
// docs/results.md, "tcp+loopback: several PEs per host".
const envPerf = "GOSHMEM_HYBRID_PERF"

// TestNamespacedPerf measures, with shmemperf on namespaced hosts and in
// one run, what the composite has targets for: put, get and fetch-add between
// two PEs of one host in a 2 x 2 job against a loopback-only job (1 host x
// 2); between hosts against tcp alone, both in the same 2 x 2 job with
// the intra-host part off and in a job of 2 hosts x 1; barrier and 8-byte
// sum-reduce at 2 x 2 and 3 x 2 with the intra-host part on and off
// (GOSHMEM_HYBRID=0); and, beside them, broadcast, fcollect, collect and
// sum-reduce of 64 KiB at 3 x 2, on and off. The configurations alternate,
// round after round, and the table gives each figure's median over the
// rounds. It runs only when GOSHMEM_HYBRID_PERF is the number of rounds.
//
// GOSHMEM_HYBRID_PERF_GOMAXPROCS lists, comma-separated, the GOMAXPROCS
// every configuration runs with, each in turn within a round: "default"
// (the runtime's: this machine's CPUs), "oshrun" (what oshrun gives a PE:
// the CPUs over the PEs of its host, at least 1) or a number; unset, the
// default alone.
//
// GOSHMEM_HYBRID_PERF_ONLY, a regular expression, keeps the
// configurations whose names it matches.
//
// GOSHMEM_HYBRID_PERF_OTHER names a shmemperf built from another tree:
// each configuration then also runs with it, right after this tree's,
// under its name with " [other]", to compare two versions in one run.
func TestNamespacedPerf(t *testing.T) {
	rounds := 0
	if v := os.Getenv(envPerf); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			t.Fatalf("%s=%q: want a number of rounds, at least 1", envPerf, v)
		}
	}
	if rounds == 0 {
		t.Skipf("set %s=ROUNDS to measure", envPerf)
	}
	bin := filepath.Join(t.TempDir(), "shmemperf")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/goshmem/goshmem/cmd/shmemperf").CombinedOutput(); err != nil {
		t.Fatalf("build shmemperf: %v\n%s", err, out)
	}
	h3 := newNSHosts(t, 3)
	off := core.EnvHybrid + "=0"
	// loopback's waiters on the futex, with a yield phase first, as the
	// composite had them before they slept in the poller.
	futex := loopback.EnvWake + "=" + loopback.WakeFutex
	procs := []string{"default"}
	if v := os.Getenv(envPerf + "_GOMAXPROCS"); v != "" {
		procs = strings.Split(v, ",")
		for _, p := range procs {
			if n, err := strconv.Atoi(p); p != "default" && p != "oshrun" && (err != nil || n < 1) {
				t.Fatalf("%s_GOMAXPROCS=%q: want a comma-separated list of default, oshrun or numbers from 1", envPerf, v)
			}
		}
	}
	p2p := "put_lat,get_lat,fadd_lat"
	coll := "barrier,team_reduce_lat"
	data := "team_bcast_lat,team_fcollect_lat,team_collect_lat,team_reduce_lat"
	dataArgs := []string{"-sizes", "65536", "-iters", "1000", "-warmup", "20"}
	type config struct {
		name   string
		hostOf []int
		env    []string
		tests  string
		args   []string // shmemperf's sizes and counts; nil: 8 bytes
	}
	configs := []config{
		{"2x2 same host", []int{0, 0, 1, 1}, nil, p2p + "," + coll, nil},
		{"2x2 same host, hybrid off", []int{0, 0, 1, 1}, []string{off}, p2p + "," + coll, nil},
		{"2x2 same host, futex wake", []int{0, 0, 1, 1}, []string{futex}, coll, nil},
		{"loopback alone 1x2", []int{0, 0}, []string{core.EnvProvider + "=loopback"}, p2p, nil},
		{"2x2 other host", []int{0, 1, 0, 1}, nil, p2p, nil},
		{"2x2 other host, hybrid off", []int{0, 1, 0, 1}, []string{off}, p2p, nil},
		{"tcp alone 2x1", []int{0, 1}, nil, p2p, nil},
		{"3x2", []int{0, 0, 1, 1, 2, 2}, nil, coll, nil},
		{"3x2, hybrid off", []int{0, 0, 1, 1, 2, 2}, []string{off}, coll, nil},
		{"3x2, futex wake", []int{0, 0, 1, 1, 2, 2}, []string{futex}, coll, nil},
		{"3x2 data", []int{0, 0, 1, 1, 2, 2}, nil, data, dataArgs},
		{"3x2 data, hybrid off", []int{0, 0, 1, 1, 2, 2}, []string{off}, data, dataArgs},
	}
	figures := map[string][]float64{} // config/test -> latency in us, per round
	var order []string
	if only := os.Getenv(envPerf + "_ONLY"); only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			t.Fatalf("%s_ONLY=%q: want a regular expression: %v", envPerf, only, err)
		}
		configs = slices.DeleteFunc(configs, func(c config) bool { return !re.MatchString(c.name) })
	}
	// Each configuration runs with this tree's shmemperf, then with the
	// other one if there is.
	type run struct {
		config
		bin string
	}
	var runs []run
	other := os.Getenv(envPerf + "_OTHER")
	for _, c := range configs {
		runs = append(runs, run{c, bin})
		if other != "" {
			c.name += " [other]"
			runs = append(runs, run{c, other})
		}
	}
	for r := range rounds {
		for _, procs := range procs {
			for _, c := range runs {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				// The namespaced hosts share this machine's CPUs: every PE
				// is told the PEs outnumber them, as they do.
				env := append([]string{core.EnvProvider + "=tcp", core.EnvCPUs + "=1"}, c.env...)
				name := c.name
				if procs != "default" {
					n := procs
					if procs == "oshrun" {
						// Every host of a configuration has as many PEs.
						perHost := 0
						for _, h := range c.hostOf {
							if h == c.hostOf[0] {
								perHost++
							}
						}
						n = strconv.Itoa(max(1, runtime.NumCPU()/perHost))
					}
					env = append(env, "GOMAXPROCS="+n)
					name += " [GOMAXPROCS=" + n + "]"
				}
				args := c.args
				if args == nil {
					args = []string{"-sizes", "8", "-iters", "20000", "-warmup", "500"}
				}
				j := h3.startOn(ctx, t, c.hostOf, env,
					c.bin, append([]string{"-test", c.tests, "-json"}, args...)...)
				errs := j.wait()
				cancel()
				for pe, err := range errs {
					if err != nil {
						t.Fatalf("round %d, %s: PE %d: %v\n%s", r, c.name, pe, err, j.outs[pe].String())
					}
				}
				sc := bufio.NewScanner(strings.NewReader(j.outs[0].String()))
				for sc.Scan() {
					var res struct {
						Test      string   `json:"test"`
						LatencyUS *float64 `json:"latency_us"`
					}
					if json.Unmarshal(sc.Bytes(), &res) != nil || res.LatencyUS == nil {
						continue
					}
					key := name + " / " + res.Test
					if _, ok := figures[key]; !ok {
						order = append(order, key)
					}
					figures[key] = append(figures[key], *res.LatencyUS)
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds, median latency in microseconds (each round's figures):\n", rounds)
	for _, k := range order {
		v := slices.Clone(figures[k])
		slices.Sort(v)
		fmt.Fprintf(&b, "%-45s %10.2f   %v\n", k, v[len(v)/2], figures[k])
	}
	t.Log("\n" + b.String())
}
