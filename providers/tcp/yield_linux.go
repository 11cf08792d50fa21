package tcp

import "syscall"

// yield gives the CPU to another thread (sched_yield) as a poll does
// between looks, as a raw system call: the runtime's entersyscall around
// it would wake a sleeping sysmon (raw_unix.go). The thread keeps its
// runtime processor through the yield, where sysmon could hand it to
// another thread after 20 us or more; the goroutines of a PE that polls
// have nothing else to run meanwhile, and a hand-off costs a wake-up.
func yield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
