//go:build linux

package sys

import (
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations (linux/futex.h). x/sys/unix does not export them. The
// private flag is deliberately absent: these words are shared between
// processes.
const (
	futexWait = 0
	futexWake = 1
)

// FutexWait sleeps while *addr == val, until a FutexWake on the same word
// (from any process mapping it), a signal, or timeout (<= 0: no limit).
//
// It returns nil when woken, when *addr != val already on entry, or when
// interrupted: callers re-read the word and decide. A timeout returns
// os.ErrDeadlineExceeded. Other errors (a word outside any mapping, a
// kernel without futexes) are returned as *os.SyscallError.
func FutexWait(addr *uint32, val uint32, timeout time.Duration) error {
	var tsp unsafe.Pointer
	var ts unix.Timespec
	if timeout > 0 {
		ts = unix.NsecToTimespec(int64(timeout))
		tsp = unsafe.Pointer(&ts)
	}
	// Syscall, not RawSyscall: the thread may sleep, and the Go scheduler
	// must be told so that it can hand the P to another goroutine.
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val),
		uintptr(tsp), 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EINTR:
		return nil
	case unix.ETIMEDOUT:
		return os.ErrDeadlineExceeded
	}
	return os.NewSyscallError("futex wait", e)
}

// FutexWake wakes up to n waiters sleeping in FutexWait on addr and
// returns how many it woke.
func FutexWake(addr *uint32, n int) (int, error) {
	if n < 0 {
		n = 0
	}
	if n > WakeAll {
		n = WakeAll
	}
	// RawSyscall: a wake never sleeps, and outside the runtime's
	// system-call state the caller keeps its runtime processor even if
	// the CPU is taken from it in the kernel (see Yield).
	r, _, e := unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(n), 0, 0, 0)
	if e != 0 {
		return 0, os.NewSyscallError("futex wake", e)
	}
	return int(r), nil
}

// Yield gives the CPU to another runnable thread of any process
// (sched_yield). It costs a fraction of a microsecond, far less than the
// shortest sleep the kernel's timers deliver, so waiters yield before they
// sleep.
//
// It is made in the runtime's system-call state, so a yield that was
// away long lets the runtime's monitor hand the caller's processor to
// another goroutine: loops that yield and never call runtime.Gosched rely
// on it. Loops that do call Gosched use YieldHeld.
func Yield() {
	unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}

// CanYield says that Yield and YieldHeld give the CPU up.
const CanYield = true

// YieldHeld is Yield as a raw system call: the caller keeps its runtime
// processor however long the kernel keeps it away. For loops that also
// call runtime.Gosched, which lets this process's goroutines run, or that
// wait, for a bounded time, for something no goroutine of this process
// does: there a yield that found another thread to run (what it is for,
// where the PEs outnumber the CPUs) was often away long enough for the
// monitor to take the processor and hand it to another thread, which the
// caller then had to take back, two more thread wake-ups.
func YieldHeld() {
	unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
