//go:build linux

package sys

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// CPUs lists the CPUs the calling thread may run on, in ascending order.
func CPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// OnCPUs calls f on an OS thread bound to cpus, so that a process f
// starts inherits the binding, and then unbinds the thread. With no CPUs
// it calls f unbound.
func OnCPUs(cpus []int, f func() error) error {
	if len(cpus) == 0 {
		return f()
	}
	runtime.LockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("sched_getaffinity: %w", err)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("sched_setaffinity to CPUs %v: %w", cpus, err)
	}
	ferr := f()
	if err := unix.SchedSetaffinity(0, &old); err != nil {
		// The thread stays bound: keep it to this goroutine, so the
		// runtime ends it with the goroutine instead of reusing it.
		return fmt.Errorf("sched_setaffinity back: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}
