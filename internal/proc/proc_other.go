//go:build !linux

package proc

// Alive cannot tell on this system and reports every positive id
// alive, so callers fall back on their own timeouts.
func Alive(pid int) bool { return pid > 0 }

// Start cannot tell on this system.
func Start(pid int) (uint64, bool) { return 0, false }

// Stopped cannot tell on this system.
func Stopped(pid int) bool { return false }
