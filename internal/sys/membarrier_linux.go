//go:build linux

package sys

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// membarrier(2) commands (linux/membarrier.h). x/sys/unix does not export
// them.
const (
	membarrierQuery                   = 0
	membarrierGlobalExpedited         = 1 << 1
	membarrierRegisterGlobalExpedited = 1 << 2
)

// RegisterGlobalBarrier makes this process one that GlobalBarrier, called
// by any process, interrupts. Every process that relies on GlobalBarrier
// must register before the stores it orders. It is idempotent.
//
// On a kernel without the expedited global command (before Linux 4.16),
// or where a sandbox forbids membarrier, it returns an error wrapping
// errors.ErrUnsupported; the caller then fences on both sides instead.
func RegisterGlobalBarrier() error {
	mask, err := membarrier(membarrierQuery)
	if err == nil && mask&membarrierGlobalExpedited == 0 {
		err = fmt.Errorf("membarrier: the kernel offers commands %#x, not GLOBAL_EXPEDITED: %w", mask, errors.ErrUnsupported)
	}
	if err == nil {
		_, err = membarrier(membarrierRegisterGlobalExpedited)
	}
	return err
}

// GlobalBarrier runs a full memory barrier on every thread of every
// registered process that is running on some CPU, and returns once all of
// them have (threads that are not running pass one when they are next
// scheduled). So a thread that stores and then loads with no fence of its
// own, and a thread that publishes a store, calls GlobalBarrier and then
// loads, cannot both miss the other's store: the cheap side of an
// asymmetric Dekker handshake pays nothing. It costs an interrupt of each
// CPU running a registered process, some microseconds: for rare paths.
func GlobalBarrier() error {
	_, err := membarrier(membarrierGlobalExpedited)
	return err
}

func membarrier(cmd int) (int, error) {
	// Syscall, not RawSyscall: the expedited commands wait for other CPUs.
	r, _, e := unix.Syscall(unix.SYS_MEMBARRIER, uintptr(cmd), 0, 0)
	switch e {
	case 0:
		return int(r), nil
	case unix.ENOSYS, unix.EINVAL, unix.EPERM:
		return 0, fmt.Errorf("%w: %w", os.NewSyscallError("membarrier", e), errors.ErrUnsupported)
	}
	return 0, os.NewSyscallError("membarrier", e)
}
