package shmem

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/mem"
)

// The wait report. OpenSHMEM has no timeouts, and a collective that a
// live PE never joins waits forever; so after WaitReport in one wait a PE
// says, once, where it waits and what the PEs it waits for are doing, and
// goes on waiting.
//
// What each PE is doing lies in the doing line, after the exit word's: the
// time it began to wait (Unix nanoseconds; 0 while it waits in nothing)
// and the routine, NUL-padded. A PE writes only its own line, when a wait
// goes to sleep and when it ends; the reporter reads the others' through
// the provider. A line read while its PE rewrites it can mix two waits:
// the report is a hint, and decodeDoing only refuses what no PE wrote.

// EnvWaitReport is the variable that sets WaitReport's delay.
const EnvWaitReport = "GOSHMEM_WAIT_REPORT"

// DefaultWaitReport is how long a wait lasts before it is reported.
const DefaultWaitReport = time.Minute

// doingName is the room for a routine's name in a doing line.
const doingName = cacheLine - 8

// doingOff is the heap offset of this PE's doing line.
func (w *World) doingOff() int { return internalSize + w.heapSize + cacheLine }

// encodeDoing writes a doing line: since 0 says the PE waits in nothing.
// The name lands before the time, which is what says the PE waits.
func encodeDoing(line []byte, op string, since int64) {
	n := copy(line[8:cacheLine], op)
	clear(line[8+n : cacheLine])
	atomic.StoreUint64(mem.Word64(line, 0), uint64(since))
}

// decodeDoing reads a doing line another PE wrote: the routine it waits
// in and since when, or waiting false. ok is false for bytes no PE
// writes: a name that is not printable ASCII, or bytes after its end.
func decodeDoing(line []byte) (op string, since int64, waiting, ok bool) {
	if len(line) != cacheLine {
		return "", 0, false, false
	}
	since = int64(binary.LittleEndian.Uint64(line))
	name := line[8:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		if bytes.IndexFunc(name[i:], func(r rune) bool { return r != 0 }) >= 0 {
			return "", 0, false, false
		}
		name = name[:i]
	}
	for _, c := range name {
		if c < ' ' || c > '~' {
			return "", 0, false, false
		}
	}
	if since < 0 {
		return "", 0, false, false
	}
	return string(name), since, since != 0, true
}

// doing publishes what this PE waits in, op since since; since 0 says it
// waits in nothing.
func (w *World) doing(op string, since int64) {
	encodeDoing(w.local[w.doingOff():w.doingOff()+cacheLine], op, since)
}

// waitWatch is one wait's view of time: when it began to sleep, whether it
// has published that and reported it.
type waitWatch struct {
	start     time.Time
	published bool
	reported  bool
}

// watch is called between a wait's sleeps: it publishes the wait once and
// reports it once WaitReport has passed.
func (w *World) watch(m among, ww *waitWatch) {
	if !ww.published {
		ww.published = true
		if ww.start.IsZero() {
			ww.start = time.Now()
		}
		w.doing(m.op, ww.start.UnixNano())
		return
	}
	if !ww.reported && w.reportAfter > 0 && time.Since(ww.start) >= w.reportAfter {
		ww.reported = true
		w.reportWait(m, time.Since(ww.start))
	}
}

// unwatch ends what watch began.
func (w *World) unwatch(ww *waitWatch) {
	if ww.published {
		w.doing("", 0)
	}
}

// peerDoing is what PE pe said it waits in, read through the collectives'
// endpoint.
func (w *World) peerDoing(pe int) string {
	var line [cacheLine]byte
	if err := w.coll.ep.Get(pe, w.heap, w.doingOff(), line[:]); err != nil {
		return fmt.Sprintf("cannot be asked (%v)", err)
	}
	op, since, waiting, ok := decodeDoing(line[:])
	switch {
	case !ok:
		return "cannot be told (its line holds no routine)"
	case !waiting:
		return "waits in no goshmem routine (it computes, sleeps or is stopped)"
	}
	if op == "" {
		op = "a goshmem routine"
	}
	return fmt.Sprintf("waits in %s, for %s", op, roundWait(time.Since(time.Unix(0, since))))
}

func roundWait(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d.Round(100 * time.Millisecond)
}

// reportWait says what this PE waits in, for how long, and what the PEs it
// waits for are doing: a collective's other members, or every other PE
// for a wait any of them may end. PEs doing the same are named together.
func (w *World) reportWait(m among, waited time.Duration) {
	op := m.op
	if op == "" {
		op = "a goshmem routine"
	}
	var pes []int
	var whom string
	switch {
	case m.team != nil:
		pes = m.team.members
		whom = fmt.Sprintf("the other members of its team of %d PEs", len(pes))
	case m.as.Size > 0:
		for r := range m.as.Size {
			pes = append(pes, m.as.PE(r))
		}
		whom = fmt.Sprintf("the other members of active set (start %d, log stride %d, size %d)", m.as.Start, m.as.LogStride, m.as.Size)
	default:
		for pe := range w.npes {
			pes = append(pes, pe)
		}
		whom = "any other PE, which may end it"
	}
	const most = 64 // PEs asked; a larger job's report names the first
	byDoing := map[string][]int{}
	asked := 0
	for _, pe := range pes {
		if pe == w.me {
			continue
		}
		if asked == most {
			break
		}
		asked++
		d := w.peerDoing(pe)
		byDoing[d] = append(byDoing[d], pe)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "goshmem: PE %d has waited %v in %s for %s (reported after %s=%v; the wait goes on):",
		w.me, roundWait(waited), op, whom, EnvWaitReport, w.reportAfter)
	keys := make([]string, 0, len(byDoing))
	for d := range byDoing {
		keys = append(keys, d)
	}
	sort.Slice(keys, func(i, j int) bool { return byDoing[keys[i]][0] < byDoing[keys[j]][0] })
	for _, d := range keys {
		fmt.Fprintf(&b, "\n  %s %s", peList(byDoing[d]), d)
	}
	if asked < len(pes)-1 {
		fmt.Fprintf(&b, "\n  (the other %d PEs not asked)", len(pes)-1-asked)
	}
	b.WriteByte('\n')
	_, _ = io.WriteString(w.reportOut, b.String())
}

// peList names PEs as "PE 3" or "PEs 1, 2, 5".
func peList(pes []int) string {
	if len(pes) == 1 {
		return fmt.Sprintf("PE %d", pes[0])
	}
	s := make([]string, len(pes))
	for i, pe := range pes {
		s[i] = fmt.Sprint(pe)
	}
	return "PEs " + strings.Join(s, ", ")
}

// BarrierWait is what a barrier of every PE that waits outside shmem's
// own waits (the domain's barrier, the C library's) calls between its
// sleeps, having waited so long in op. It reports what ends the wait: what
// Err reports, or a PE that finalized instead of joining the barrier
// (leftErr). Every PE that finalized completed every barrier it was in,
// and a barrier completes only once every PE has arrived, so a waiter is
// at most in the barrier such a PE completed last: the grace starts at
// the first sight of it, once per World. As shmem's waits do, it
// publishes the wait and reports it once WaitReport has passed.
// BarrierDone ends it.
func (w *World) BarrierWait(op string, waited time.Duration) error {
	if err := w.Err(); err != nil {
		return err
	}
	all := w.amongAll()
	if err := w.leftErr(all, &w.coll.leftSeen); err != nil {
		return err
	}
	ww := &w.coll.barrierWatch
	if !ww.published {
		ww.start = time.Now().Add(-waited)
	}
	all.op = op
	w.watch(all, ww)
	return nil
}

// BarrierDone ends what BarrierWait began, once the barrier returns.
func (w *World) BarrierDone() {
	w.unwatch(&w.coll.barrierWatch)
	w.coll.barrierWatch = waitWatch{}
}
