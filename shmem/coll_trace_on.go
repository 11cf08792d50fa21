//go:build shmemtrace

package shmem

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/goshmem/goshmem/core"
)

// With the shmemtrace tag, a tree step records, in unix nanoseconds, when
// this PE passed each of its phases (the trace* marks), and the World
// keeps traceSteps consecutive steps from step GOSHMEM_TREE_TRACE_AT
// (default 1000) of the process, then writes them to the directory
// GOSHMEM_TREE_TRACE, one file per PE (tree-pe<PE>-n<team size>.txt),
// one line per step, one column per mark, 0 where the step did not pass
// it. Every PE's nth step is the same collective, and the clocks of PEs
// on one machine agree, so the files line up into each hop's time: a
// child's traceUp against its parent's traceKids, a parent's traceDown
// against its child's traceRelease.
//
//	go build -tags shmemtrace ./cmd/shmemperf
//
// The trace's variables, in the registry (core.Declare).
var (
	treeTraceParam = core.Declare(core.Param{Env: "GOSHMEM_TREE_TRACE",
		Help: "in a build with the shmemtrace tag: the directory the trees' per-step times are written to; unset, none are"})[0]
	treeTraceAtParam = core.Declare(core.Param{Env: "GOSHMEM_TREE_TRACE_AT", Kind: core.KindInt, Default: "1000",
		Help: "in a build with the shmemtrace tag: the first collective traced"})[0]
)

type treeTrace struct{ at [traceMarks]int64 }

func (tr *treeTrace) mark(i int) { tr.at[i] = time.Now().UnixNano() }

const traceSteps = 64

var treeTraces struct {
	once       sync.Once
	dir        string
	from, next int64
	steps      [traceSteps][traceMarks]int64
	mu         sync.Mutex
}

func (tr *treeTrace) done(g *group) {
	s := &treeTraces
	s.once.Do(func() {
		lookup := g.w.lookup
		s.dir, _ = treeTraceParam.Lookup(lookup)
		s.from = 1000
		if v, err := treeTraceAtParam.Int(lookup, 0, math.MaxInt); err == nil {
			s.from = int64(v)
		}
	})
	if s.dir == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.next
	s.next++
	if n < s.from || n >= s.from+traceSteps {
		return
	}
	s.steps[n-s.from] = tr.at
	if n < s.from+traceSteps-1 {
		return
	}
	f, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("tree-pe%d-n%d.txt", g.w.me, g.n)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmem: tree trace: %v\n", err)
		return
	}
	for _, st := range s.steps {
		for i, v := range st {
			if i > 0 {
				fmt.Fprint(f, " ")
			}
			fmt.Fprint(f, v)
		}
		fmt.Fprintln(f)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "shmem: tree trace: %v\n", err)
	}
}
