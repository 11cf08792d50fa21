package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
	pb "github.com/goshmem/goshmem/providers/plugin/proto"
	"github.com/goshmem/goshmem/providers/provkit"
)

// endpoint sends its operations to the plugin on one stream, pipelined:
// puts, value puts, non-fetching atomics and fences go out without
// waiting, and their results (in order, one per operation) are collected
// when a later call waits, when the staging area is full, when the window
// of outstanding operations is full, or at Quiet. Gets and fetching
// operations wait for their own result, which comes after everything
// issued before them.
//
// Data passes through the staging area, a file both processes map: a put
// copies its source there and returns (so every put is an inject), a get
// has the plugin fill an extent there and copies it out. Extents are
// reused once their operation's result has arrived (see ring).
//
// Every wait for the plugin (sending, when the stream's window is full,
// and receiving) is bounded by the plugin's timeout; a plugin that does
// not answer in time is reported hung, the stream is cancelled, and every
// later call fails with the same error.
type endpoint struct {
	provkit.Endpoint // the provider's name, the job's PEs, closed
	dom              *domain

	mu      sync.Mutex // serializes the stream and guards the fields below
	stream  pb.Provider_EndpointClient
	cancel  context.CancelFunc
	stage   []byte
	ring    ring
	pending queue // issued, result not yet received, oldest first
	broken  error // sticky: the stream failed
	req     pb.Op // reused for every request
	watch   *time.Timer
	late    atomic.Bool // the watch fired

	counter core.Counter
}

// pending is an operation whose result has not arrived.
type pending struct {
	kind pb.Op_Kind
	pe   int
	end  int    // end of its staging extent, or -1 if it has none
	seq  uint64 // its number on the counter, if counted
}

var _ core.Endpoint = (*endpoint)(nil)

// stagePrefix names staging files in the job directory; the plugin's
// region capture skips them.
const stagePrefix = "plugin-stage-"

func newEndpoint(d *domain, opts core.EndpointOptions) (*endpoint, error) {
	e := &endpoint{Endpoint: provkit.Endpoint{Provider: d.p.name, NPEs: d.npes}, dom: d, ring: ring{size: d.set.staging}}
	// The job directory only, never the user's directory above it.
	if err := os.Mkdir(d.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, d.opErr("new endpoint", err)
	}
	path := filepath.Join(d.dir, fmt.Sprintf("%s%d-%016x", stagePrefix, d.rank, rand.Uint64()))
	var err error
	if e.stage, err = sys.CreateShared(path, d.set.staging); err != nil {
		return nil, d.opErr("new endpoint", fmt.Errorf("staging area: %w", err))
	}
	defer os.Remove(path) // the plugin has mapped it, or failed to
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.watch = time.AfterFunc(time.Hour, func() { e.late.Store(true); cancel() })
	e.watch.Stop()
	if e.stream, err = d.proc.rpc.Endpoint(ctx); err != nil {
		err = d.fail("new endpoint", err)
	} else {
		e.req = pb.Op{Kind: pb.Op_OPEN, StagePath: path, StageSize: int64(d.set.staging),
			Serialized: opts.Serialized, Private: opts.Private, NoStore: opts.NoStore}
		e.pending.push(pending{kind: pb.Op_OPEN, pe: -1, end: -1})
		_, err = e.send(true)
	}
	if err != nil {
		cancel()
		return nil, errors.Join(err, sys.Unmap(e.stage))
	}
	return e, nil
}

var opNames = map[pb.Op_Kind]string{
	pb.Op_OPEN: "new endpoint", pb.Op_PUT: "put", pb.Op_GET: "get", pb.Op_PUT_VALUE: "put-value",
	pb.Op_GET_VALUE: "get-value", pb.Op_ATOMIC: "atomic", pb.Op_FETCH_ATOMIC: "fetch-atomic",
	pb.Op_FENCE: "fence", pb.Op_QUIET: "quiet",
}

// region returns r as this domain's region and the size of each PE's
// part of it, or provkit.Foreign when it is not one of the domain's.
func (e *endpoint) region(r core.Region) (*region, int) {
	if reg, ok := r.(*region); ok && reg.dom == e.dom {
		return reg, reg.size
	}
	return nil, provkit.Foreign
}

// timed runs f, one wait for the plugin, under the watch.
func (e *endpoint) timed(f func() error) error {
	e.watch.Reset(e.dom.set.timeout)
	err := f()
	e.watch.Stop()
	return err
}

// fail records why the stream broke, as an *Error naming the plugin, and
// returns it; every later call returns it too.
func (e *endpoint) fail(op string, err error) error {
	if e.broken != nil {
		return e.broken
	}
	if e.late.Load() {
		err = fmt.Errorf("no answer within %v: %w", e.dom.set.timeout, core.ErrTimeout)
	}
	e.broken = e.dom.fail(op, err)
	if !errors.Is(e.broken, core.ErrInvalid) {
		e.dom.broken.CompareAndSwap(nil, &e.broken)
	}
	e.cancel()
	return e.broken
}

// send sends e.req, recorded last in pending by the caller, and, if wait,
// collects results up to and including its own, which it returns. The
// caller holds mu.
func (e *endpoint) send(wait bool) (*pb.Result, error) {
	kind := e.req.Kind
	if e.broken == nil {
		// The plugin process was found gone, by the domain or another
		// endpoint: no use sending.
		e.broken = e.dom.lostErr()
	}
	if e.broken != nil {
		return nil, e.broken
	}
	if err := e.timed(func() error { return e.stream.Send(&e.req) }); err != nil {
		return nil, e.fail(opNames[kind], err)
	}
	if !wait {
		return nil, nil
	}
	for {
		mine := e.pending.n == 1
		r, err := e.collect(mine)
		if mine || err != nil {
			return r, err
		}
	}
}

// collect receives the result of the oldest pending operation and frees
// its staging extent. If mine, the caller waits for that very operation
// and gets the wrapped provider's error for it; otherwise the error is
// recorded in the counter, for Quiet to report. The caller holds mu.
func (e *endpoint) collect(mine bool) (*pb.Result, error) {
	p := e.pending.front()
	var r *pb.Result
	err := e.timed(func() (err error) { r, err = e.stream.Recv(); return err })
	if err != nil {
		return nil, e.fail(opNames[p.kind], err)
	}
	e.pending.pop()
	if p.end >= 0 {
		e.ring.release(p.end)
	}
	rerr, derr := decodeErr(r.Err)
	if derr == nil && rerr == nil && r.Value != 0 && p.kind != pb.Op_GET_VALUE && p.kind != pb.Op_FETCH_ATOMIC {
		derr = fmt.Errorf("value %#x in the result of a %s", r.Value, opNames[p.kind])
	}
	if derr != nil {
		return nil, e.fail(opNames[p.kind], garbage("%v", derr))
	}
	if rerr != nil {
		rerr = e.Err(opNames[p.kind], p.pe, rerr)
	}
	switch {
	case !counted(p.kind):
	case rerr != nil && !mine:
		e.counter.Fail(p.seq, rerr)
		return r, nil
	default:
		e.counter.Complete(p.seq, 1)
	}
	return r, rerr
}

// counted reports whether the counter counts operations of kind k: all but
// the stream's opening and Quiet, which are always waited for.
func counted(k pb.Op_Kind) bool { return k != pb.Op_OPEN && k != pb.Op_QUIET }

// issue records the request in e.req as pending and sends it, once the
// window has room for it.
func (e *endpoint) issue(pe, end int, wait bool) (*pb.Result, error) {
	if err := e.room(); err != nil {
		return nil, err
	}
	var seq uint64
	if counted(e.req.Kind) {
		seq = e.counter.Issue(1)
	}
	e.pending.push(pending{kind: e.req.Kind, pe: pe, end: end, seq: seq})
	return e.send(wait)
}

// extent reserves n bytes of the staging area, collecting results until
// enough are free. The caller holds mu.
func (e *endpoint) extent(n int) (int, error) {
	for {
		if start, ok := e.ring.alloc(n); ok {
			return start, nil
		}
		if _, err := e.collect(false); err != nil {
			return 0, err
		}
	}
}

func (e *endpoint) rmaReq(kind pb.Op_Kind, pe int, reg *region, off, n, stage int) {
	e.req = pb.Op{Kind: kind, Pe: int32(pe), Region: reg.id, Off: int64(off), Len: int64(n), Stage: int64(stage)}
}

func (e *endpoint) put(op string, pe int, r core.Region, off int, src []byte) error {
	reg, size := e.region(r)
	if err := e.CheckRMA(op, pe, r, size, off, len(src)); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(src) > 0 {
		n := min(len(src), e.ring.size)
		start, err := e.extent(n)
		if err != nil {
			return err
		}
		copy(e.stage[start:start+n], src[:n])
		e.rmaReq(pb.Op_PUT, pe, reg, off, n, start)
		if _, err := e.issue(pe, start+n, false); err != nil {
			return err
		}
		src, off = src[n:], off+n
	}
	return nil
}

func (e *endpoint) get(op string, pe int, r core.Region, off int, dst []byte) error {
	reg, size := e.region(r)
	if err := e.CheckRMA(op, pe, r, size, off, len(dst)); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(dst) > 0 {
		n := min(len(dst), e.ring.size)
		start, err := e.extent(n)
		if err != nil {
			return err
		}
		e.rmaReq(pb.Op_GET, pe, reg, off, n, start)
		if _, err := e.issue(pe, start+n, true); err != nil {
			return err
		}
		copy(dst[:n], e.stage[start:start+n])
		dst, off = dst[n:], off+n
	}
	return nil
}

// Put implements core.Endpoint: it returns once src is in the staging area.
func (e *endpoint) Put(pe int, r core.Region, off int, src []byte) error {
	return e.put("put", pe, r, off, src)
}

// PutNBI implements core.Endpoint, as Put.
func (e *endpoint) PutNBI(pe int, r core.Region, off int, src []byte) error {
	return e.put("put-nbi", pe, r, off, src)
}

// Get implements core.Endpoint.
func (e *endpoint) Get(pe int, r core.Region, off int, dst []byte) error {
	return e.get("get", pe, r, off, dst)
}

// GetNBI implements core.Endpoint; it completes before it returns, like Get.
func (e *endpoint) GetNBI(pe int, r core.Region, off int, dst []byte) error {
	return e.get("get-nbi", pe, r, off, dst)
}

// PutValue implements core.Endpoint: the value travels in the request.
func (e *endpoint) PutValue(pe int, r core.Region, off int, v uint64, size int) error {
	reg, rsize := e.region(r)
	if err := e.CheckValue("put-value", pe, r, rsize, off, size); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rmaReq(pb.Op_PUT_VALUE, pe, reg, off, size, 0)
	e.req.Value = v
	_, err := e.issue(pe, -1, false)
	return err
}

// GetValue implements core.Endpoint: the value travels in the result.
func (e *endpoint) GetValue(pe int, r core.Region, off int, size int) (uint64, error) {
	reg, rsize := e.region(r)
	if err := e.CheckValue("get-value", pe, r, rsize, off, size); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rmaReq(pb.Op_GET_VALUE, pe, reg, off, size, 0)
	res, err := e.issue(pe, -1, true)
	if err != nil {
		return 0, err
	}
	if size < 8 && res.Value>>(8*size) != 0 {
		return 0, e.fail("get-value", garbage("value %#x for a %d-byte get", res.Value, size))
	}
	return res.Value, nil
}

func (e *endpoint) amo(opName string, pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64, fetch bool) (uint64, error) {
	reg, size := e.region(r)
	if err := e.CheckAtomic(opName, pe, r, size, off, op, t, &e.dom.info.Atomics); err != nil {
		return 0, err
	}
	if !fetch {
		if err := e.CheckNonFetching(opName, pe, op, t); err != nil {
			return 0, err
		}
	}
	kind := pb.Op_ATOMIC
	if fetch {
		kind = pb.Op_FETCH_ATOMIC
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.req = pb.Op{Kind: kind, Pe: int32(pe), Region: reg.id, Off: int64(off), Value: operand, Compare: compare,
		AtomicOp: uint32(op), AtomicType: uint32(t)}
	res, err := e.issue(pe, -1, fetch)
	if err != nil || !fetch {
		return 0, err
	}
	if t.Size() == 4 && res.Value>>32 != 0 {
		return 0, e.fail(opName, garbage("value %#x from a 4-byte atomic", res.Value))
	}
	return res.Value, nil
}

// Atomic implements core.Endpoint.
func (e *endpoint) Atomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand uint64) error {
	_, err := e.amo("atomic", pe, r, off, op, t, operand, 0, false)
	return err
}

// PutSignal implements core.Endpoint: Put, Fence and Atomic over the plugin
// protocol, which has no put-with-signal message.
func (e *endpoint) PutSignal(pe int, r core.Region, off int, src []byte, sigR core.Region, sigOff int, op core.AtomicOp, operand uint64) error {
	return core.PutFenceSignal(e, pe, r, off, src, sigR, sigOff, op, operand)
}

// FetchAtomic implements core.Endpoint.
func (e *endpoint) FetchAtomic(pe int, r core.Region, off int, op core.AtomicOp, t core.AtomicType, operand, compare uint64) (uint64, error) {
	return e.amo("fetch-atomic", pe, r, off, op, t, operand, compare, true)
}

// Fence implements core.Endpoint: the plugin fences the wrapped endpoint
// in stream order.
func (e *endpoint) Fence() error {
	if err := e.CheckOpen("fence"); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.req = pb.Op{Kind: pb.Op_FENCE}
	_, err := e.issue(-1, -1, false)
	return err
}

// Quiet implements core.Endpoint: the plugin quiets the wrapped endpoint,
// and every result up to its own is collected; the first error of an
// operation nobody waited for is returned.
func (e *endpoint) Quiet() error {
	if err := e.CheckOpen("quiet"); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.quiet()
}

func (e *endpoint) quiet() error {
	e.req = pb.Op{Kind: pb.Op_QUIET}
	if _, err := e.issue(-1, -1, true); err != nil {
		return err
	}
	return e.counter.TakeErr()
}

// Counter implements core.Endpoint.
func (e *endpoint) Counter() *core.Counter { return &e.counter }

// Close implements core.Endpoint: it quiets, ends the stream and unmaps
// the staging area. It is idempotent.
func (e *endpoint) Close() error {
	if !e.MarkClosed() {
		return nil
	}
	e.dom.forget(e)
	e.mu.Lock()
	defer e.mu.Unlock()
	var err error
	if e.broken == nil {
		err = e.quiet()
		if cerr := e.stream.CloseSend(); cerr != nil && err == nil {
			err = e.fail("close", cerr)
		}
		// The plugin ends its side when it has released its endpoint.
		if e.broken == nil {
			if _, rerr := e.stream.Recv(); !errors.Is(rerr, io.EOF) && err == nil {
				if rerr == nil {
					rerr = garbage("a result after the last operation")
				}
				err = e.fail("close", rerr)
			}
		}
	}
	e.watch.Stop()
	e.cancel()
	return errors.Join(err, sys.Unmap(e.stage))
}
