package loopback

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/core"
	"github.com/goshmem/goshmem/internal/sys"
)

// How a waiter sleeps once it has spun and yielded (see WaitChange).
//
// "futex", the default: in the kernel, on its seq word. The thread blocks
// in a system call, and its runtime processor is handed to another thread
// only when the runtime's monitor notices, 20 µs to 10 ms later.
//
// "poller": in the runtime's network poller, on a wake-up pipe of its own
// (a FIFO in the job directory). A process whose other goroutines wait in
// the poller too (a transport's socket readers, as in the composite of
// loopback with tcp) then sleeps in one epoll wait that hears both a
// store of a PE of this host and a frame from another. The waiter does
// not yield first: with one runtime processor (GOMAXPROCS=1, what oshrun
// gives a PE whose host has as many PEs as CPUs) a goroutine that loops
// on Gosched keeps the scheduler from ever polling the network, so a
// socket's frame waited for the end of the yield phase and then for the
// monitor to take the processor back from the futex sleep.
//
// "auto": in the poller where this process has one runtime processor
// (GOMAXPROCS=1), else on the futex: with two or more, an idle processor's
// thread polls the network while the waiter yields, and the yield phase
// measured faster (docs/measuring.md, "Sleeping in the poller or on the
// futex"). What the composite with tcp sets.
//
// A PE that sleeps in the poller does not take the asymmetric fence
// (GOSHMEM_LOOPBACK_FENCE): it does not yield, so every wait would start
// with a membarrier; with the writers' atomic add instead, 2x2 barrier
// took 167 µs against 198 and 3x2 247 against 319 on namespaced hosts
// at GOMAXPROCS=1 (docs/measuring.md, "Sleeping in the poller or on the
// futex").
//
// Each PE chooses for itself; where any PE of a domain sleeps in the
// poller, every PE makes a pipe and opens every PE's (Open), and writers
// poke a pipe whose owner counts a sleeper there. Such a domain follows
// PROTOCOL.md with one more step for writers, so it does not offer its
// words under the protocol's name (see SharedProtocol): a writer that
// knew only the futex would leave such a sleeper to its timeout.
var paramWake = core.NewParam(Name, "WAKE", WakeFutex,
	`how a waiting PE sleeps after yielding: futex (in the kernel), poller (in the Go runtime's network poller, `+
		`on a pipe of its own, without yielding first) or auto (poller where GOMAXPROCS is 1, else futex; `+
		`what a composite with a network transport sets)`)

// The values of GOSHMEM_LOOPBACK_WAKE.
const (
	WakeFutex  = "futex"
	WakePoller = "poller"
	WakeAuto   = "auto"
)

// EnvWake is the variable that chooses how waiters sleep; a composite
// whose other transport waits in the runtime's poller sets it to WakeAuto
// in the configuration it opens loopback with, unless the user set it.
var EnvWake = paramWake.Env

// wantPoller reads GOSHMEM_LOOPBACK_WAKE: whether this PE sleeps in the
// poller.
func wantPoller(cfg *core.Config) (bool, error) {
	switch v := strings.TrimSpace(cfg.Value(paramWake)); v {
	case WakeFutex:
		return false, nil
	case WakePoller:
		return true, nil
	case WakeAuto:
		return runtime.GOMAXPROCS(0) == 1, nil
	default:
		return false, &core.EnvError{Var: paramWake.Env, Value: v, Allowed: `"futex", "poller" or "auto"`}
	}
}

// anyPoller reads the wake flags of Open's exchange: whether some PE
// sleeps in the poller, so that every PE needs the pipes.
func anyPoller(all [][]byte) (bool, error) {
	yes := false
	for pe, m := range all {
		switch m[wakeOff] {
		case 0:
		case 1:
			yes = true
		default:
			return false, fmt.Errorf("PE %d sent wake flag %d, not 0 or 1: %w", pe, m[wakeOff], core.ErrInvalid)
		}
	}
	return yes, nil
}

// pollWake is a domain's side of sleeping in the poller: its own pipe,
// which its sleeper reads, and every PE's (its own included), which its
// wakers poke.
type pollWake struct {
	file *os.File // this PE's pipe, read in the poller
	fds  []int    // fds[pe]: pe's pipe, to poke
	// mu lets one goroutine at a time sleep on the pipe (a poke wakes one
	// reader); the others sleep on the futex, as without the pipe.
	mu  sync.Mutex
	buf [64]byte // drains the pipe; guarded by mu
	// raw is file's, and drain, a method value made once, reads it
	// without the runtime's system-call state (see drainPipe).
	raw   syscall.RawConn
	drain func(fd uintptr) bool
	// direct says that this process's own wake-ups of its sleeper, PE
	// rank, end its read without the pipe (poke): where it has one
	// runtime processor.
	direct bool
	rank   int
}

// drainPipe is the pipe's read, for raw.Read: a raw system call on the
// non-blocking descriptor, which returns false (wait in the poller) when
// the pipe is empty. Read through the os.File, the call entered the
// runtime's system-call state, and where the CPUs are oversubscribed
// the runtime's monitor took the processor from a read preempted in the
// kernel and handed it to another thread.
func (w *pollWake) drainPipe(fd uintptr) bool {
	for {
		_, err := sys.ReadNoWait(fd, w.buf[:])
		if err != syscall.EINTR {
			return err != syscall.EAGAIN
		}
	}
}

// openWake makes this PE's pipe and opens every PE's, in three collective
// steps like share's: every PE makes and opens its own; every PE opens
// everybody's; every PE removes its own name, which nobody opens after
// that barrier, so nothing is left in the directory even if a PE dies.
func (d *domain) openWake() (*pollWake, error) {
	w := &pollWake{fds: make([]int, d.npes), direct: runtime.GOMAXPROCS(0) == 1, rank: d.rank}
	for i := range w.fds {
		w.fds[i] = -1
	}
	own := d.path(d.rank, "wake")
	err := sys.MakeFIFO(own)
	made := err == nil
	if made {
		w.file, err = sys.OpenFIFOReader(own)
	}
	if err == nil {
		// A pipe the poller cannot wait on would make every sleep
		// return at once: refuse it here instead.
		err = w.file.SetReadDeadline(time.Time{})
	}
	if err == nil {
		w.raw, err = w.file.SyscallConn()
		w.drain = w.drainPipe
	}
	if err != nil {
		err = fmt.Errorf("make wake-up pipe: %w", err)
	}
	err = core.Agree(d.boot, err)
	if err == nil {
		for pe := range w.fds {
			if w.fds[pe], err = sys.OpenFIFOWriter(d.path(pe, "wake")); err != nil {
				err = fmt.Errorf("open wake-up pipe of PE %d: %w", pe, err)
				break
			}
		}
		err = core.Agree(d.boot, err)
	}
	var rmErr error
	if made {
		rmErr = os.Remove(own)
	}
	if err = errors.Join(err, core.Agree(d.boot, rmErr)); err != nil {
		return nil, errors.Join(err, w.close())
	}
	return w, nil
}

// close closes the pipes; a sleeper in the poller returns at once.
func (w *pollWake) close() error {
	var errs []error
	if w.file != nil {
		errs = append(errs, w.file.Close())
	}
	for i, fd := range w.fds {
		if fd >= 0 {
			errs = append(errs, sys.CloseFD(fd))
			w.fds[i] = -1
		}
	}
	return errors.Join(errs...)
}

// poke wakes pe's sleeper in the poller, if it has one: called after
// pe's seq moved. A full pipe already holds a wake-up, and a pipe whose
// owner is gone takes bytes nobody reads: neither is an error, and no
// put fails for it.
//
// This PE's own sleeper, woken from its own process (a frame of another
// host that the composite's inter-host transport applied, WaitPoke), is
// woken without the pipe where the process has one runtime processor
// (direct): a read deadline in the past ends its read, and the runtime
// makes it the next goroutine to run once the poker, the transport's
// reader, parks. Through the pipe that wake-up cost a write, the poller's
// look and a read. With more processors it goes through the pipe all the
// same: the poller hands the sleeper to an idle processor, where a
// goroutine readied by another waits for that one to stop or for a thief
// (a poker that kept running made a wake-up take 0.1-0.5 ms in
// TestNoLostSelfPoke). sleep looks at its word again after it set its own
// deadline, which may have replaced the poke's.
func (w *pollWake) poke(c *peerCtl, pe int) {
	if atomic.LoadUint32(c.pollers) == 0 {
		return
	}
	if w.direct && pe == w.rank {
		_ = w.file.SetReadDeadline(pokedDeadline) // closed: the sleeper finds the domain closed
		return
	}
	_ = sys.Poke(w.fds[pe])
}

// pokedDeadline is a read deadline long past, which poke sets to wake
// this PE's own sleeper.
var pokedDeadline = time.Unix(1, 0)

// sleep is futexSleep in the poller: it sleeps on this PE's pipe while
// word holds old, for at most max, counted in pollers, and returns the
// word's value after. The same handshake as the futex's: the count is
// announced before the word is re-checked, and a waker changes the word
// before it loads the count, so either it pokes or the sleeper sees the
// change. A byte left from a wake-up after its sleeper had gone makes the
// next read return at once; the loop reads again, so it only costs a
// read. ok is false if another goroutine sleeps on the pipe already.
func (w *pollWake) sleep(word, pollers *uint32, old uint32, max time.Duration) (v uint32, ok bool) {
	if !w.mu.TryLock() {
		return 0, false
	}
	defer w.mu.Unlock()
	atomic.AddUint32(pollers, 1)
	defer atomic.AddUint32(pollers, ^uint32(0))
	deadline := time.Now().Add(max)
	for {
		if v = atomic.LoadUint32(word); v != old || time.Until(deadline) <= 0 {
			return v, true
		}
		if err := w.file.SetReadDeadline(deadline); err != nil {
			return v, true // closed: the caller finds the domain closed
		}
		// A poke of this PE's own between the look above and the
		// deadline just set is lost with its deadline; the change it
		// followed is not.
		if v = atomic.LoadUint32(word); v != old {
			return v, true
		}
		if err := w.raw.Read(w.drain); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return atomic.LoadUint32(word), true
		}
	}
}
